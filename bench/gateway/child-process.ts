import { spawn, type ChildProcess } from "node:child_process";
import { connect } from "node:net";

/** True once something accepts connections on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

export interface StartedProcess {
  readonly child: ChildProcess;
  /** The first stdout/stderr match of `ready` (empty when readiness was a port). */
  readonly match: RegExpExecArray | string[];
  stop(): Promise<void>;
}

/**
 * Starts a process and waits (bounded) for a line that says it is ready.
 * stop() sends SIGTERM, then SIGKILL if it has not exited within 3 s, so a
 * benchmark never leaves a process behind.
 */
export async function startProcess(command: string, args: readonly string[], ready: RegExp | { port: number }, options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<StartedProcess> {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env: options.env ?? process.env });
  let output = "";
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(timer);
  };
  try {
    const match = await new Promise<RegExpExecArray | string[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${command} did not start within ${options.timeoutMs ?? 20_000} ms; its output:\n${output}`)), options.timeoutMs ?? 20_000);
      if (!(ready instanceof RegExp)) {
        const poll = () =>
          void accepts(ready.port).then((open) => {
            if (open) {
              clearTimeout(timer);
              resolve([]);
            } else if (child.exitCode === null) setTimeout(poll, 20);
          });
        poll();
      }
      const look = (data: Buffer) => {
        output += data.toString();
        const found = ready instanceof RegExp ? ready.exec(output) : null;
        if (found) {
          clearTimeout(timer);
          resolve(found);
        }
      };
      child.stdout?.on("data", look);
      child.stderr?.on("data", look);
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`${command} exited (${code}) before it was ready; its output:\n${output}`));
      });
    });
    // Keep draining the pipes so a chatty process never blocks on a full one.
    child.stdout?.resume();
    child.stderr?.resume();
    return { child, match, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
