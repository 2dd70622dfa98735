const GiB = 1024 ** 3;

/** "41.2 GiB": one decimal, binary units, as nvidia-smi's MiB figures convert. */
export function formatGiB(bytes: number): string {
  return `${(bytes / GiB).toFixed(1)} GiB`;
}

/**
 * Context lengths as people say them: 131072 → "128k", 32768 → "32k",
 * 40960 → "40k", 18500 → "18k" (rounded down: never promise more than fits),
 * under 1024 → the exact number.
 */
export function formatContext(tokens: number): string {
  if (tokens < 1024) return String(tokens);
  return `${Math.floor(tokens / 1024)}k`;
}

/**
 * A token count as the output prints it, read back: "32768", "32k" or "32K"
 * (×1024, as formatContext writes it), "1M" (×1024², 1M = 1048576).
 * Undefined for anything else, so the caller can name what it expected.
 * Whatever the plan prints, `--context` accepts as written.
 */
export function parseTokenCount(text: string): number | undefined {
  const match = /^(\d+)([kKM]?)$/.exec(text.trim());
  if (!match) return undefined;
  const multiplier = match[2] === "M" ? 1024 * 1024 : match[2] === "" ? 1 : 1024;
  const tokens = Number(match[1]) * multiplier;
  return Number.isSafeInteger(tokens) ? tokens : undefined;
}
