/**
 * For the commands that run things (demo, server, agent): their standard
 * output and error closing is not a reason to stop, nor to stop half-way.
 * `llmgw demo | tee demo.out` and Ctrl-C kill tee with the demo's whole
 * process group, and a closed terminal sends SIGHUP and turns every write
 * into EIO; the write the shutdown makes to say so then fails with EPIPE or
 * EIO, which Node raises as an uncaught error, skipping every step of the
 * shutdown after it. Once the output is gone, what is written is dropped.
 */
export function outliveClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    // Nothing can be said about it: the stream it would be said on is the one that failed.
    stream.on("error", () => undefined);
  }
}

/**
 * The signals that end a command run at a terminal: Ctrl-C, a supervisor's
 * stop, and the terminal itself gone (SIGHUP, which would otherwise end the
 * process at once, with none of its clean-up).
 */
export const stopSignals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
export type StopSignal = (typeof stopSignals)[number];
