// Durations as people write them, apart from their schemas: the CLI parses its
// options with these at every start, and must not load the schema library to do it.

const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `90s`, `10m`, `1h30m`, `2d`; returns milliseconds, or undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(trimmed)) return undefined;
  let total = 0;
  for (const match of trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) {
    total += Number(match[1]) * (units[match[2] as string] ?? 0);
  }
  return total;
}

/** Renders milliseconds the way a person writes them: `10m`, `1h30m`, `45s`. */
export function formatDuration(milliseconds: number): string {
  if (milliseconds === 0) return "0s";
  let rest = milliseconds;
  let text = "";
  for (const [unit, size] of [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1000]] as const) {
    const count = Math.floor(rest / size);
    if (count > 0) {
      text += `${count}${unit}`;
      rest -= count * size;
    }
  }
  return rest > 0 ? `${text}${rest}ms` : text;
}
