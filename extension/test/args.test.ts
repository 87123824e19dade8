import assert from "node:assert/strict";
import { test } from "node:test";
import { ArgsMemory, formatArgs, parseArgs } from "../src/core/args";

test("words split on any white space", () => {
    assert.deepEqual(parseArgs("  --batch-size 8\t--lr=1e-3 \n x "), ["--batch-size", "8", "--lr=1e-3", "x"]);
    assert.deepEqual(parseArgs(""), []);
});

test("quotes keep spaces; single quotes are literal, double quotes honour \\\" and \\\\", () => {
    assert.deepEqual(parseArgs(`--name 'my run' --path "a b/c" --msg "say \\"hi\\" \\\\ ok"`), [
        "--name", "my run", "--path", "a b/c", "--msg", `say "hi" \\ ok`,
    ]);
    assert.deepEqual(parseArgs(`'it'\\''s'`), ["it's"]);
    assert.deepEqual(parseArgs(`a\\ b ""`), ["a b", ""]);
});

test("an unclosed quote is an error, not a guess", () => {
    assert.throws(() => parseArgs(`--name 'my run`), /unclosed single quote/);
    assert.throws(() => parseArgs(`"x`), /unclosed double quote/);
});

test("formatArgs round-trips through parseArgs", () => {
    const cases = [[], ["plain", "--x=1"], ["with space", "it's", `dq"`, "", "$HOME", "a\\b", "ünï"]];
    for (const args of cases) assert.deepEqual(parseArgs(formatArgs(args)), args);
    assert.equal(formatArgs(["--bs", "8", "a b"]), "--bs 8 'a b'");
});

test("arguments are remembered per file", async () => {
    const map = new Map<string, unknown>();
    const memory = new ArgsMemory({ get: (k) => map.get(k) as any, update: async (k, v) => void map.set(k, v) });
    assert.equal(memory.get("file:///a.py"), undefined);
    await memory.remember("file:///a.py", ["--bs", "8"]);
    await memory.remember("file:///b.py", []);
    assert.deepEqual(memory.get("file:///a.py"), ["--bs", "8"]);
    assert.deepEqual(memory.get("file:///b.py"), []);
    map.set("vramlens.args:file:///c.py", "not a list");
    assert.equal(memory.get("file:///c.py"), undefined);
});
