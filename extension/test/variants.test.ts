import assert from "node:assert/strict";
import { test } from "node:test";
import { argumentVariant, memoryLimitVariant, parseVariantList, PRESETS, repeatsSetting, variantProblem } from "../src/core/variants";

test("every preset variant is one the server accepts", () => {
    for (const preset of PRESETS.filter((p) => p.kind === "variant")) assert.equal(variantProblem(preset.variant!), undefined, preset.label);
    assert.deepEqual(PRESETS.filter((p) => p.kind === "variant").map((p) => p.variant), [
        "expandable_segments:True", "max_split_size_mb:128", "garbage_collection_threshold:0.6", "roundup_power2_divisions:4"]);
});

test("a typed line splits on spaces and semicolons, keeps commas of argument values, drops repeats", () => {
    assert.deepEqual(parseVariantList(" expandable_segments:True;--batch-size=8,16,32  memory-limit=24GiB expandable_segments:True"),
        ["expandable_segments:True", "--batch-size=8,16,32", "memory-limit=24GiB"]);
});

test("what is not a variant is named with the accepted forms", () => {
    assert.throws(() => parseVariantList("fast_mode:on"), /"fast_mode:on" is not a variant: write an allocator setting/);
    assert.throws(() => parseVariantList("--batch-size"), /--ARG=V1,V2/);
    assert.throws(() => parseVariantList("memory-limit=lots"), /"lots" is not a size/);
    assert.throws(() => parseVariantList("   "), /at least one variant/);
});

test("memory limits: sizes and fractions of the card", () => {
    assert.equal(memoryLimitVariant(" 24 GiB "), "memory-limit=24GiB");
    assert.equal(memoryLimitVariant("1600MiB"), "memory-limit=1600MiB");
    assert.equal(memoryLimitVariant("0.5"), "memory-limit=0.5");
    assert.equal(memoryLimitVariant("141e9"), "memory-limit=141e9");
    assert.throws(() => memoryLimitVariant("1.5"), /not a size/);
    assert.throws(() => memoryLimitVariant("100"), /not a size/);
    assert.throws(() => memoryLimitVariant(""), /not a size/);
});

test("argument values in the forms people type", () => {
    assert.equal(argumentVariant("--batch-size=8,16,32"), "--batch-size=8,16,32");
    assert.equal(argumentVariant("batch-size 8, 16"), "--batch-size=8,16");
    assert.equal(argumentVariant("--seq-len 512 1024"), "--seq-len=512,1024");
    assert.throws(() => argumentVariant("--batch-size"), /--ARG=V1,V2/);
    assert.throws(() => argumentVariant("=8,16"), /Name the argument/);
});

test("repeats: whole numbers from 1 to 20, else 3", () => {
    assert.equal(repeatsSetting(5), 5);
    for (const bad of [0, 21, 2.5, "4", undefined, null]) assert.equal(repeatsSetting(bad), 3);
});
