import assert from "node:assert/strict";
import { test } from "node:test";
import { toServerSettings } from "../src/core/serverSettings";

test("defaults when nothing is set", () => {
    assert.deepEqual(toServerSettings({}), {
        interpreter: "", args: [], cwd: "", env: {}, memoryLimit: "", timeoutSeconds: 0,
        stacks: "python", annotationStyle: "endOfLine", lint: {}, processesPerNode: 0, experimentRepeats: 3,
    });
});

test("values are passed on, trimmed", () => {
    const settings = toServerSettings({
        interpreter: " /opt/py/bin/python ", args: ["--bs", "8"], cwd: "/data", env: { A: "1", N: 2, B: true },
        memoryLimit: "24GiB", timeoutSeconds: 90, stacks: "all", annotationStyle: "endOfLine",
        lint: { select: ["VL1"], ignore: ["VL301"], preview: true },
    });
    assert.equal(settings.interpreter, "/opt/py/bin/python");
    assert.deepEqual(settings.args, ["--bs", "8"]);
    assert.deepEqual(settings.env, { A: "1", N: "2", B: "true" });
    assert.equal(settings.memoryLimit, "24GiB");
    assert.equal(settings.timeoutSeconds, 90);
    assert.equal(settings.stacks, "all");
    assert.equal(settings.annotationStyle, "endOfLine");
    assert.deepEqual(settings.lint, { select: ["VL1"], ignore: ["VL301"], preview: true });
});

test("the older `python` setting is read when `interpreter` is empty", () => {
    assert.equal(toServerSettings({ python: "/usr/bin/python3.11" }).interpreter, "/usr/bin/python3.11");
    assert.equal(toServerSettings({ interpreter: "/a", python: "/b" }).interpreter, "/a");
    assert.equal(toServerSettings({ interpreter: "  ", python: "/b" }).interpreter, "/b");
});

test("values of the wrong type fall back to the defaults", () => {
    const settings = toServerSettings({
        args: "--bs 8", env: ["A=1"], timeoutSeconds: -5, stacks: "cpp", annotationStyle: "rainbow",
        lint: { select: "VL1", ignore: [3, "VL2"], preview: "yes" }, memoryLimit: 12,
    });
    assert.deepEqual(settings.args, []);
    assert.deepEqual(settings.env, {});
    assert.equal(settings.timeoutSeconds, 0);
    assert.equal(settings.stacks, "python");
    assert.equal(settings.annotationStyle, "endOfLine");
    assert.deepEqual(settings.lint, { ignore: ["VL2"] });
    assert.equal(settings.memoryLimit, "");
    assert.deepEqual(toServerSettings({ env: { A: { nested: 1 } } }).env, {});
});

test("processes per node and experiment repeats: whole numbers, else their defaults", () => {
    assert.equal(toServerSettings({ processesPerNode: 4 }).processesPerNode, 4);
    assert.equal(toServerSettings({ processesPerNode: -1 }).processesPerNode, 0);
    assert.equal(toServerSettings({ processesPerNode: 1.5 }).processesPerNode, 0);
    assert.equal(toServerSettings({ experimentRepeats: 5 }).experimentRepeats, 5);
    assert.equal(toServerSettings({ experimentRepeats: 0 }).experimentRepeats, 3);
});
