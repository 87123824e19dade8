// What "Compare interventions…" asks for: the variants, written as the server takes them
// (docs/experiments.md: "expandable_segments:True", "memory-limit=24GiB", "--batch-size=8,16,32").
// Checked here so a typo is caught in the input box, not after a run. No vscode import: unit-tested.

/** Allocator settings PyTorch reads from PYTORCH_CUDA_ALLOC_CONF (the server accepts the same keys). */
export const ALLOCATOR_KEYS = [
    "expandable_segments", "max_split_size_mb", "garbage_collection_threshold", "roundup_power2_divisions",
    "pinned_use_cuda_host_register", "release_lock_on_cudamalloc", "backend", "max_non_split_rounding_mb",
    "pinned_num_register_threads",
] as const;

export type PresetKind = "variant" | "memoryLimit" | "argument" | "other";

export interface VariantPreset {
    label: string;
    detail: string;
    kind: PresetKind;
    variant?: string; // kind "variant": sent as is
}

export const PRESETS: readonly VariantPreset[] = [
    { kind: "variant", label: "expandable_segments:True", variant: "expandable_segments:True",
      detail: "Segments that grow in place: cures fragmentation from changing tensor sizes" },
    { kind: "variant", label: "max_split_size_mb:128", variant: "max_split_size_mb:128",
      detail: "Never split cached blocks larger than 128 MiB: keeps large free blocks whole" },
    { kind: "variant", label: "garbage_collection_threshold:0.6", variant: "garbage_collection_threshold:0.6",
      detail: "Reclaim unused cached blocks once 60% of the limit is reserved" },
    { kind: "variant", label: "roundup_power2_divisions:4", variant: "roundup_power2_divisions:4",
      detail: "Round allocation sizes to quarter powers of two: fewer odd-sized blocks" },
    { kind: "memoryLimit", label: "A memory limit…", detail: "An emulated smaller card, e.g. 24GiB" },
    { kind: "argument", label: "Argument values…", detail: "One variant per value of a script argument, e.g. --batch-size=8,16,32" },
    { kind: "other", label: "Other variants…", detail: "Type them: allocator settings, memory-limit=SIZE, --ARG=V1,V2" },
];

// A size needs its unit (a bare number is ambiguous: bytes or a fraction?); the server reads the same forms.
const SIZE = /^[0-9]+(\.[0-9]+)?([eE][0-9]+\s*([KMGT]i?B?|B)?|\s*([KMGT]i?B?|B))$/i;
const SETTING = /^([a-z_0-9]+):(.+)$/;
export const MAX_REPEATS = 20;

/** Why one variant cannot be used, or undefined when it can. */
export function variantProblem(variant: string): string | undefined {
    const text = variant.trim();
    if (text.startsWith("memory-limit=")) {
        const size = text.slice("memory-limit=".length);
        return SIZE.test(size) || isFraction(size) ? undefined : `${JSON.stringify(size)} is not a size: write e.g. memory-limit=24GiB`;
    }
    if (text.startsWith("-")) {
        const [flag, values] = splitOnce(text, "=");
        const items = (values ?? "").split(",").map((v) => v.trim()).filter(Boolean);
        return flag.replace(/^-+/, "") && items.length
            ? undefined
            : `${JSON.stringify(text)}: write the argument and its values as --ARG=V1,V2,... (e.g. --batch-size=8,16,32)`;
    }
    const match = SETTING.exec(text);
    if (match && (ALLOCATOR_KEYS as readonly string[]).includes(match[1])) return undefined;
    return `${JSON.stringify(text)} is not a variant: write an allocator setting (expandable_segments:True), memory-limit=SIZE, or --ARG=V1,V2,...`;
}

/** The variants typed in one line, separated by spaces or semicolons; throws with the first problem. */
export function parseVariantList(line: string): string[] {
    const variants = line.split(/[\s;]+/).filter(Boolean);
    if (!variants.length) throw new Error("Give at least one variant.");
    for (const variant of variants) {
        const problem = variantProblem(variant);
        if (problem) throw new Error(problem);
    }
    return [...new Set(variants)];
}

/** "24GiB" (or "0.5", a fraction of the card) → "memory-limit=24GiB"; throws when it is no size. */
export function memoryLimitVariant(size: string): string {
    const variant = `memory-limit=${size.trim().replace(/\s+/g, "")}`;
    const problem = variantProblem(variant);
    if (problem) throw new Error(problem);
    return variant;
}

/** "batch-size 8,16", "--batch-size=8, 16" → "--batch-size=8,16"; throws when values are missing. */
export function argumentVariant(text: string): string {
    const trimmed = text.trim();
    const [flag, values] = trimmed.includes("=") ? splitOnce(trimmed, "=") : splitOnce(trimmed, " ");
    const name = flag.trim().replace(/^-*/, "");
    const items = (values ?? "").split(/[,\s]+/).filter(Boolean);
    const variant = `--${name}=${items.join(",")}`;
    const problem = name ? variantProblem(variant) : "Name the argument, e.g. --batch-size=8,16,32";
    if (problem) throw new Error(problem);
    return variant;
}

/** The repeats setting: a whole number from 1 to MAX_REPEATS, else the default 3. */
export function repeatsSetting(value: unknown): number {
    return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_REPEATS ? value : 3;
}

function isFraction(text: string): boolean {
    const value = Number(text);
    return text !== "" && Number.isFinite(value) && value > 0 && value <= 1 && !/[a-z]/i.test(text);
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
    const at = text.indexOf(separator);
    return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + separator.length)];
}
