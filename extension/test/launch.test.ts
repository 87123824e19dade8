import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { bundledLibs, serverLaunch } from "../src/core/launch";

test("the server runs as `<python> -m vramlens serve` with the bundled libraries first", () => {
    const libs = bundledLibs("/ext");
    assert.equal(libs, path.join("/ext", "bundled", "libs"));
    const launch = serverLaunch("/venv/bin/python", libs, { PATH: "/bin", PYTHONPATH: "/mine" });
    assert.equal(launch.command, "/venv/bin/python");
    assert.deepEqual(launch.args, ["-m", "vramlens", "serve"]);
    assert.equal(launch.env.PYTHONPATH, `${libs}${path.delimiter}/mine`);
    assert.equal(launch.env.PATH, "/bin");
    assert.equal(launch.env.PYTHONUNBUFFERED, "1");
});

test("without bundled libraries (a development checkout) PYTHONPATH is left as it was", () => {
    assert.equal(serverLaunch("python3", undefined, {}).env.PYTHONPATH, undefined);
    assert.equal(serverLaunch("python3", "/ext/bundled/libs", {}).env.PYTHONPATH, "/ext/bundled/libs");
});
