import assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";
import { shownCapturePath } from "../src/core/capturePath";

const HOME = "/home/ana";

test("a capture inside the workspace folder is named relative to it", () => {
    assert.equal(shownCapturePath("/tmp/run-1/workspace/captures/retained/capture.json", ["/tmp/run-1/workspace"], HOME, path.posix),
        "captures/retained/capture.json");
    assert.equal(shownCapturePath("/home/ana/proj/.vramlens/captures/train-1", ["/home/ana/proj/"], HOME, path.posix),
        ".vramlens/captures/train-1");
});

test("of nested workspace folders, the deepest one holding the capture names it", () => {
    assert.equal(shownCapturePath("/w/sub/captures/a", ["/w", "/w/sub"], HOME, path.posix), "captures/a");
});

test("a capture outside every workspace folder keeps its path, the home folder written as ~", () => {
    assert.equal(shownCapturePath("/home/ana/.vscode/extensions/vramlens/sample/capture", ["/home/ana/proj"], HOME, path.posix),
        "~/.vscode/extensions/vramlens/sample/capture");
    assert.equal(shownCapturePath("/srv/captures/a", ["/home/ana/proj"], HOME, path.posix), "/srv/captures/a");
    assert.equal(shownCapturePath("/srv/captures/a", [], undefined, path.posix), "/srv/captures/a");
});

test("a sibling folder whose name starts like the workspace's, or the folder itself, is not inside it", () => {
    assert.equal(shownCapturePath("/w/proj-old/captures/a", ["/w/proj"], HOME, path.posix), "/w/proj-old/captures/a");
    assert.equal(shownCapturePath("/w/proj", ["/w/proj"], HOME, path.posix), "/w/proj");
    assert.equal(shownCapturePath("/w/proj/..data/a", ["/w/proj"], HOME, path.posix), "..data/a");
});

test("on Windows the drive letter's case does not matter", () => {
    assert.equal(shownCapturePath("C:\\Users\\ana\\proj\\captures\\a", ["c:\\Users\\ana\\proj"], "C:\\Users\\ana", path.win32), "captures\\a");
    assert.equal(shownCapturePath("D:\\data\\a", ["c:\\Users\\ana\\proj"], "C:\\Users\\ana", path.win32), "D:\\data\\a");
});
