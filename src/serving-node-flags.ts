/**
 * The V8 flags the request-serving commands run with: a young generation of
 * two 16 MB semi-spaces, from the start and at most.
 *
 * The minimum is for the request path. Each proxied request leaves tens of
 * kilobytes of short-lived objects; V8 starts with 1 MB semi-spaces, which at
 * thousands of requests a second are collected every few hundred requests,
 * each collection a pause on the request path. With 16 MB they are rarer, and
 * nearly everything in them is already dead.
 *
 * The maximum is for the control plane, which keeps its lists and views
 * alive across collections. V8 grows the semi-spaces while much survives
 * them, up to 16 MB on Node 20 but 32 MB or more on later releases; at 2,000
 * models and 500 nodes, Node 24's server grown that way held 277 MB before
 * any list was read (183 MB at 16 MB), and each collection copied more
 * survivors.
 *
 * Node takes these flags only when it starts (`v8.setFlagsFromString` later
 * changes nothing, and NODE_OPTIONS refuses the minimum): bin/llmgw.js
 * restarts itself with them (cli/launch.ts), and `llmgw gateway --workers N`
 * forks its workers with them.
 */
export const servingNodeFlags: readonly string[] = ["--min-semi-space-size=16", "--max-semi-space-size=16"];

/** The commands that serve requests for as long as they run. */
const servingCommands: ReadonlySet<string> = new Set(["server", "gateway"]);

/** Flags that already size the young generation: the operator's own choice, which is kept. */
const youngGenerationFlag = /^--(min|max)[-_]semi[-_]space[-_]size(=|$)/;

/**
 * The node arguments to start this process again with, or undefined to run
 * as it was started: for `llmgw server` and `llmgw gateway` only, and only
 * when neither the command line nor NODE_OPTIONS sizes the young generation
 * already (which is also how the restarted process knows it is done). The
 * process's own node arguments (an inspector, a profiler) are kept.
 */
export function tunedNodeArguments(command: string | undefined, execArgv: readonly string[], nodeOptions: string | undefined, optOut: string | undefined): string[] | undefined {
  if (command === undefined || !servingCommands.has(command)) return undefined;
  if (optOut === "off") return undefined;
  const given = [...execArgv, ...(nodeOptions ?? "").split(/\s+/)];
  if (given.some((flag) => youngGenerationFlag.test(flag))) return undefined;
  return [...servingNodeFlags, ...execArgv];
}

/**
 * How far V8 lets `llmgw server`'s old generation grow past what survived
 * its last full collection before it collects again: 15 %. V8's own rule
 * lets a heap that it collects quickly grow to twice its live size or more,
 * and the control plane keeps a large live heap (its catalog, fleet and kept
 * list answers: about 115 MB at 5,000 models and 1,000 nodes), so most of
 * its resident memory was garbage not yet collected. At that size, side by
 * side on a two-core machine, the server held 318 to 355 MB after the
 * bench's reads with V8's rule, 274 MB at 40 % and 251 MB at 15 %, every
 * list read and heartbeat still within its goal; the price is more frequent
 * full collections, most of whose marking V8 does on other threads.
 *
 * V8 reads this setting at each collection, so unlike the young
 * generation's size it takes effect when set at run time, on every Node.
 */
export const serverHeapGrowingPercent = 15;

/** Flags that already set the old generation's growth: the operator's own choice, which is kept. */
const heapGrowingFlag = /^--heap[-_]growing[-_]percent(=|$)/;

/**
 * The V8 setting to apply at run time to this process, or undefined to
 * leave V8's rule: for `llmgw server` only (a gateway's live heap is small),
 * and not when the operator set the growth on node's command line or turned
 * the tuning off.
 */
export function serverHeapSetting(command: string | undefined, execArgv: readonly string[], optOut: string | undefined): string | undefined {
  if (command !== "server" || optOut === "off") return undefined;
  if (execArgv.some((flag) => heapGrowingFlag.test(flag))) return undefined;
  return `--heap-growing-percent=${serverHeapGrowingPercent}`;
}
