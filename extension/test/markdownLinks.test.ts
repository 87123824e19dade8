import assert from "node:assert/strict";
import { test } from "node:test";
import { linkPieces } from "../webview/links";
import { renderMarkdown } from "../webview/markdown";

const LINK = { label: "train.py:20", uri: "file:///ws/train.py", line: 19 };

test("file:line tokens the server can open become links; others stay text", () => {
    assert.deepEqual(linkPieces("Find what keeps train.py:20 (+2.28 GiB) and other.py:3 alive.", [LINK]),
        ["Find what keeps ", LINK, " (+2.28 GiB) and other.py:3 alive."]);
    assert.deepEqual(linkPieces("/srv/app/train.py:20 evaluate", [LINK]), [LINK, " evaluate"]);
    assert.deepEqual(linkPieces("nothing here", [LINK]), ["nothing here"]);
    assert.deepEqual(linkPieces("train.py:200", [LINK]), ["train.py:200"]); // a different line
});

test("the report's Markdown renders; HTML in it is text, unsafe links are dropped", () => {
    const html = renderMarkdown("# GPU memory report\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```text\nx\n```\n");
    assert.match(html, /<h1>GPU memory report<\/h1>/);
    assert.match(html, /<table>/);
    assert.match(html, /<pre><code class="language-text">x\n<\/code><\/pre>/);
    const hostile = renderMarkdown('<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n[a](javascript:alert(1)) [b](command:workbench.action.terminal.new) [c](https://pytorch.org)');
    assert.doesNotMatch(hostile, /<script|<img|href="(javascript|command)/);
    assert.match(hostile, /&lt;script&gt;/);
    assert.match(hostile, /href="https:\/\/pytorch.org"/);
});

test("an aligned column is a class, not a style attribute the view's CSP would refuse", () => {
    const html = renderMarkdown("| what | bytes |\n|:---|---:|\n| allocated | 3.09 GiB |\n");
    assert.doesNotMatch(html, /style=/);
    assert.match(html, /<th class="align-right">bytes<\/th>/);
    assert.match(html, /<td class="align-right">3.09 GiB<\/td>/);
});
