import assert from "node:assert/strict";
import { test } from "node:test";
import { codeSpans } from "../webview/inline";

test("code quoted in the server's sentences becomes code pieces, without the backticks", () => {
    assert.deepEqual(codeSpans("Stop it at train.py:21 (`outputs.append(out)`): store .item()."), [
        { code: false, text: "Stop it at train.py:21 (" },
        { code: true, text: "outputs.append(out)" },
        { code: false, text: "): store .item()." },
    ]);
    assert.deepEqual(codeSpans("`a` and `b`"), [{ code: true, text: "a" }, { code: false, text: " and " }, { code: true, text: "b" }]);
    assert.deepEqual(codeSpans("no code here"), [{ code: false, text: "no code here" }]);
    assert.deepEqual(codeSpans(""), [{ code: false, text: "" }]);
});

test("a lone or doubled backtick is text; markup inside a span stays text for textContent", () => {
    assert.deepEqual(codeSpans("it's a ` lone one"), [{ code: false, text: "it's a ` lone one" }]);
    assert.deepEqual(codeSpans("``"), [{ code: false, text: "``" }]);
    assert.deepEqual(codeSpans("`<img src=x onerror=alert(1)>`"), [{ code: true, text: "<img src=x onerror=alert(1)>" }]);
});
