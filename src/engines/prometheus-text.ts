import type { EngineMetrics } from "./driver.js";

/**
 * Reads the samples named in `wanted` from Prometheus text exposition and
 * skips everything else, including lines it cannot read. Engines change their
 * metrics between releases and add labels freely (lenient on their
 * input), so one odd line must never cost us the lines we do read.
 *
 * Returns every value of each wanted name, one per label set.
 */
export function readPrometheusSamples(text: string, wanted: ReadonlySet<string>): Map<string, number[]> {
  const samples = new Map<string, number[]>();
  for (const rawLine of text.split("\n")) {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#")) continue;
    const sample = readSampleLine(line);
    if (sample === undefined || !wanted.has(sample.name)) continue;
    const values = samples.get(sample.name) ?? [];
    values.push(sample.value);
    samples.set(sample.name, values);
  }
  return samples;
}

const metricNamePattern = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

function readSampleLine(line: string): { name: string; value: number } | undefined {
  const nameMatch = metricNamePattern.exec(line);
  if (nameMatch === null) return undefined;
  const name = nameMatch[0];
  let position = name.length;
  if (line[position] === "{") {
    const end = endOfLabels(line, position);
    if (end === undefined) return undefined;
    position = end + 1;
  }
  const rest = line.slice(position).trim();
  const valueText = rest.split(/\s+/)[0];
  if (valueText === undefined || valueText === "") return undefined;
  const value = Number(valueText);
  // NaN and infinities say nothing we can act on (an empty histogram's mean, say).
  if (!Number.isFinite(value)) return undefined;
  return { name, value };
}

/** Index of the `}` closing the label set that opens at `start`, skipping braces inside quoted values. */
function endOfLabels(line: string, start: number): number | undefined {
  let insideQuotes = false;
  for (let index = start + 1; index < line.length; index += 1) {
    const character = line[index];
    if (insideQuotes) {
      if (character === "\\") index += 1;
      else if (character === '"') insideQuotes = false;
    } else if (character === '"') {
      insideQuotes = true;
    } else if (character === "}") {
      return index;
    }
  }
  return undefined;
}

/** The metric names one engine uses for each field of EngineMetrics, newest name first. */
export interface EngineMetricNames {
  readonly requestsRunning: readonly string[];
  readonly requestsWaiting: readonly string[];
  readonly kvCacheUsage: readonly string[];
  readonly promptTokensTotal: readonly string[];
  readonly generationTokensTotal: readonly string[];
}

/**
 * EngineMetrics from an engine's Prometheus text. Counts and token totals are
 * summed over label sets (one series per model or per rank); the KV cache
 * usage is the fullest series, since the fullest rank is the one that stalls.
 */
export function readEngineMetrics(text: string, names: EngineMetricNames): EngineMetrics {
  const wanted = new Set(Object.values(names).flat());
  const samples = readPrometheusSamples(text, wanted);
  const first = (candidates: readonly string[]): number[] | undefined => {
    for (const candidate of candidates) {
      const values = samples.get(candidate);
      if (values !== undefined) return values;
    }
    return undefined;
  };
  const sum = (candidates: readonly string[]): number | undefined =>
    first(candidates)?.reduce((total, value) => total + value, 0);
  const largest = (candidates: readonly string[]): number | undefined => {
    const values = first(candidates);
    return values === undefined ? undefined : Math.max(...values);
  };
  return {
    requestsRunning: sum(names.requestsRunning),
    requestsWaiting: sum(names.requestsWaiting),
    kvCacheUsage: largest(names.kvCacheUsage),
    promptTokensTotal: sum(names.promptTokensTotal),
    generationTokensTotal: sum(names.generationTokensTotal),
  };
}
