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
