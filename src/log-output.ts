import type { DestinationStream, LoggerOptions } from "pino";

/**
 * How the long-running processes (server, agent, gateway) write their logs:
 * one entry a line on stdout, where systemd's journal, `kubectl logs` and a
 * terminal all look. `json` is pino's own line, for a collector that parses
 * fields; `pretty` is the same entry for a person reading `journalctl`. At
 * the root of src/: the CLI picks the format, the server and the gateway
 * hand it to fastify, the agent to its own logger.
 */
export const logFormats = ["json", "pretty"] as const;
export type LogFormat = (typeof logFormats)[number];

/** Pino's levels a process may be told to log from (`silent`: nothing). */
export const logLevels = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/** Pino's options plus where the lines go: the shape fastify's `logger` option takes. */
export type LogSettings = LoggerOptions & { readonly stream?: DestinationStream };

/** Pino's numeric levels as a reader knows them. */
const levelNames: Readonly<Record<number, string>> = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };

/** Fields the pretty line leaves out: the journal and the terminal already say which machine and process. */
const omitted = new Set(["time", "level", "msg", "pid", "hostname", "v"]);

/** A value as logfmt writes it: bare when it is one plain word, quoted (with JSON's escapes, so it stays on one line) otherwise. */
function formatValue(value: unknown): string {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- JSON.stringify answers undefined for undefined, which its type leaves out
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? String(value);
  // eslint-disable-next-line no-control-regex -- control characters are what this finds, on purpose
  return /^[^\s"=\\\u0000-\u001f]+$/.test(text) ? text : JSON.stringify(text);
}

/** `key=value` pairs for an entry's fields, nested objects flattened to `parent.child=value`. */
function fieldPairs(fields: Readonly<Record<string, unknown>>, prefix = ""): string[] {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    if (prefix === "" && omitted.has(key)) continue;
    if (value === undefined) continue;
    const name = `${prefix}${key}`;
    if (value !== null && typeof value === "object" && !Array.isArray(value)) pairs.push(...fieldPairs(value as Record<string, unknown>, `${name}.`));
    else pairs.push(`${name}=${formatValue(value)}`);
  }
  return pairs;
}

/**
 * One of pino's JSON lines as `TIME LEVEL message key=value ...` on one
 * line: the time in UTC (ISO 8601), the level's name, the message with its
 * line breaks escaped, then the entry's fields (an error's stack escaped the
 * same way). A line that is not a JSON object is passed on as it is.
 */
export function prettyLogLine(line: string): string {
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return line.endsWith("\n") ? line : `${line}\n`;
  }
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return line.endsWith("\n") ? line : `${line}\n`;
  const fields = entry as Record<string, unknown>;
  const time = typeof fields.time === "number" ? new Date(fields.time).toISOString() : new Date().toISOString();
  const level = typeof fields.level === "number" ? (levelNames[fields.level] ?? `LEVEL${fields.level}`) : String(fields.level ?? "INFO").toUpperCase();
  const message = typeof fields.msg === "string" ? fields.msg.replace(/\r?\n/g, "\\n") : "";
  return `${[time, level.padEnd(5), message, ...fieldPairs(fields)].filter((part) => part !== "").join(" ")}\n`;
}

/** A pino destination that writes each entry as prettyLogLine reads it. */
export function prettyDestination(output: { write(text: string): unknown }): DestinationStream {
  return { write: (line: string) => void output.write(prettyLogLine(line)) };
}

/** The settings a process's logger starts from: its level, and for `pretty` the destination that rewrites each line. */
export function logSettings(level: string, format: LogFormat, output: { write(text: string): unknown } = process.stdout): LogSettings {
  return format === "pretty" ? { level, stream: prettyDestination(output) } : { level };
}
