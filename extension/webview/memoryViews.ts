// Layout of "what the memory is" (roles as one stacked bar), "who holds it" (holders) and the drill-down
// below a top line (an icicle: each node as wide as its share of its parent). Pure: unit-tested.

export interface RoleShare {
    role: string;
    bytes: number;
    label: string;
    detail?: string | null;
    figure?: string; // "2.83 GiB · 91%", from the server
}

export interface Holder {
    root: string;
    kind: string;
    bytes: number;
    tensors: number;
    length?: number | null;
    createdAt?: [string, number] | null;
    appendedAt?: [string, number] | null;
    chain?: string[];
    kindText?: string; // the server's labels: "a list of 23", "2.82 GiB", "23 tensors", "train.py:28"
    bytesText?: string;
    tensorsText?: string;
    filledAt?: string | null;
}

export interface BreakdownNode {
    label: string;
    path?: string | null;
    line?: number | null;
    bytes: number;
    bytesText?: string;
    uri?: string | null;
    children?: BreakdownNode[];
}

/** The bar's segments, largest first, each with its share of the whole (roles add up to allocated). */
export function roleSegments(roles: RoleShare[]): (RoleShare & { share: number; index: number })[] {
    const valid = roles.filter((r) => Number.isFinite(r.bytes) && r.bytes > 0 && typeof r.label === "string");
    const total = valid.reduce((sum, r) => sum + r.bytes, 0);
    return [...valid].sort((a, b) => b.bytes - a.bytes).map((r, index) => ({ ...r, share: r.bytes / total, index }));
}

export interface IcicleNode {
    label: string;
    bytes: number;
    share: number; // of its parent (of all trees at the top)
    bytesText?: string;
    uri: string | null;
    line: number | null;
    children: IcicleNode[];
}

const MAX_DEPTH = 5;
const MIN_SHARE = 0.02; // narrower than this is unreadable: folded into "other"

/** The trees as nested shares; tiny branches and depth past MAX_DEPTH are left out (their bytes stay in the parent). */
export function iciclePlan(trees: BreakdownNode[], depth = 0): IcicleNode[] {
    const valid = trees.filter((n) => Number.isFinite(n.bytes) && n.bytes > 0);
    const total = valid.reduce((sum, n) => sum + n.bytes, 0);
    if (!total || depth >= MAX_DEPTH) return [];
    return [...valid].sort((a, b) => b.bytes - a.bytes)
        .map((node) => ({
            label: node.label,
            bytes: node.bytes,
            share: node.bytes / total,
            bytesText: typeof node.bytesText === "string" ? node.bytesText : undefined,
            uri: typeof node.uri === "string" && node.uri.startsWith("file://") ? node.uri : null,
            line: Number.isInteger(node.line) ? (node.line as number) - 1 : null,
            children: iciclePlan(node.children ?? [], depth + 1),
        }))
        .filter((node) => node.share >= MIN_SHARE);
}
