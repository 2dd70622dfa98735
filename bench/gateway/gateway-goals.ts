/**
 * The gateway's goals, each against the figure of the same run that decides
 * it: one llmgw process (the side "llmgw") beside nginx's one worker and the
 * backend called directly. Kept apart from the run so the verdicts can be
 * checked on figures made up for the purpose.
 */

/** What a verdict needs of a run: the shape GatewayOverheadResults has. */
export interface GoalInputs {
  readonly settings: { readonly rates: readonly number[] };
  readonly fixed_rate: readonly { readonly side: string; readonly stream: boolean; readonly rate: number; readonly round_p99_ms: readonly number[] }[];
  readonly saturation: readonly {
    readonly side: string;
    readonly stream: boolean;
    readonly result: { readonly requestsPerSecond: number };
    readonly cpu_us_per_request: number;
    /** The part outside the kernel; absent from runs of builds before it was measured. */
    readonly user_cpu_us_per_request?: number;
  }[];
}

export interface GoalRow {
  readonly figure: string;
  readonly goal: string;
  readonly measured: string;
  /** undefined: not measured in this run (a side was left out), or a figure shown for context with no goal. */
  readonly meets: boolean | undefined;
}

/** Added p99 at the highest fixed rate must stay under this in every round, not only over their sum. */
export const addedP99GoalMs = 1;
/** One process against nginx's one worker, in requests per second at saturation. */
export const throughputGoal = 1.0;
/** CPU per request, over nginx's. */
export const cpuGoal = 1.2;

const notMeasured = (figure: string, goal: string): GoalRow => ({ figure, goal, measured: "not measured (a side was left out of this run)", meets: undefined });

export function gatewayGoals(results: GoalInputs): GoalRow[] {
  const rate = Math.max(...results.settings.rates);
  const rows: GoalRow[] = [];
  for (const stream of [false, true]) {
    const body = stream ? "streams" : "JSON";
    const rounds = (side: string) => results.fixed_rate.find((row) => row.side === side && row.stream === stream && row.rate === rate)?.round_p99_ms;
    const llmgw = rounds("llmgw");
    const direct = rounds("direct");
    const figure = `added p99 at ${rate.toLocaleString("en-US")} requests/s, ${body}, each round`;
    const goal = `< ${addedP99GoalMs} ms in every round`;
    if (llmgw === undefined || direct === undefined || llmgw.length !== direct.length || llmgw.length === 0) {
      rows.push(notMeasured(figure, goal));
      continue;
    }
    // Round against round: the sides took turns within a round, so a slow moment fell on both.
    const added = llmgw.map((p99, round) => p99 - (direct[round] as number));
    rows.push({ figure, goal, measured: added.map((value) => `${value >= 0 ? "+" : ""}${value.toFixed(2)}`).join(", ") + " ms", meets: added.every((value) => value < addedP99GoalMs) });
  }
  for (const stream of [false, true]) {
    const body = stream ? "streams" : "JSON";
    const at = (side: string) => results.saturation.find((row) => row.side === side && row.stream === stream);
    const nginx = at("nginx");
    for (const [side, context] of [
      ["llmgw", false],
      ["node-pipe", true],
    ] as const) {
      const figures = at(side);
      const who = context ? "node's floor (node-pipe: bytes piped, nothing parsed)" : "one llmgw process";
      const throughputFigure = `${who}: throughput × nginx's one worker, ${body}`;
      const cpuFigure = `${who}: CPU per request × nginx's, ${body}`;
      const throughputGoalText = context ? "none: what node allows" : `≥ ${throughputGoal.toFixed(2)}×`;
      const cpuGoalText = context ? "none: what node allows" : `≤ ${cpuGoal.toFixed(1)}×`;
      if (figures === undefined || nginx === undefined) {
        rows.push(notMeasured(throughputFigure, throughputGoalText), notMeasured(cpuFigure, cpuGoalText));
        continue;
      }
      const throughput = figures.result.requestsPerSecond / nginx.result.requestsPerSecond;
      const cpu = figures.cpu_us_per_request / nginx.cpu_us_per_request;
      rows.push(
        { figure: throughputFigure, goal: throughputGoalText, measured: `${throughput.toFixed(2)}×`, meets: context ? undefined : throughput >= throughputGoal },
        {
          figure: cpuFigure,
          goal: cpuGoalText,
          measured: `${cpu.toFixed(2)}× (${figures.cpu_us_per_request.toFixed(0)} µs against ${nginx.cpu_us_per_request.toFixed(0)}${userShare(figures, nginx)})`,
          meets: context ? undefined : cpu <= cpuGoal,
        },
      );
    }
  }
  return rows;
}

/** "; outside the kernel 20 against 6": where two proxies' CPU differs, the kernel's socket work being alike for both. */
function userShare(side: GoalInputs["saturation"][number], nginx: GoalInputs["saturation"][number]): string {
  if (side.user_cpu_us_per_request === undefined || nginx.user_cpu_us_per_request === undefined) return "";
  return `; outside the kernel ${side.user_cpu_us_per_request.toFixed(0)} against ${nginx.user_cpu_us_per_request.toFixed(0)}`;
}

/** The goals as a Markdown table. */
export function renderGatewayGoals(results: GoalInputs): string[] {
  const lines = ["| figure | goal | measured | meets |", "| --- | --- | --- | --- |"];
  for (const row of gatewayGoals(results)) lines.push(`| ${row.figure} | ${row.goal} | ${row.measured} | ${row.meets === undefined ? "" : row.meets ? "yes" : "**no**"} |`);
  return lines;
}
