// Byte sizes as people read them, in the binary units the server's text uses (GiB, MiB…). Display only.
const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

export function formatBytes(bytes: number | null | undefined): string {
    if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return "—";
    let value = Math.abs(bytes);
    let unit = 0;
    while (value >= 1024 && unit < UNITS.length - 1) {
        value /= 1024;
        unit++;
    }
    const sign = bytes < 0 ? "−" : "";
    return unit === 0 ? `${sign}${value} B` : `${sign}${value.toFixed(2)} ${UNITS[unit]}`;
}

export function formatPercent(share: number | null | undefined): string {
    return typeof share === "number" && Number.isFinite(share) ? `${Math.round(share * 100)}%` : "—";
}
