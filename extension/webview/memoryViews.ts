// Layout of "what the memory is" (roles as one stacked bar), "who holds it" (holders) and the drill-down
// below a top line (an icicle: each node as wide as its share of its parent). Pure: unit-tested.

export interface RoleShare {
    role: string;
    bytes: number;
    label: string;
    detail?: string | null;
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
}

export interface BreakdownNode {
    label: string;
    path?: string | null;
    line?: number | null;
    bytes: number;
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
            uri: typeof node.uri === "string" && node.uri.startsWith("file://") ? node.uri : null,
            line: Number.isInteger(node.line) ? (node.line as number) - 1 : null,
            children: iciclePlan(node.children ?? [], depth + 1),
        }))
        .filter((node) => node.share >= MIN_SHARE);
}
