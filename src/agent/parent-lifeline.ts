import type { Readable } from "node:stream";

/**
 * Calls `gone` once when `input` ends: the process that started this one
 * holds the only other end of that pipe, and the kernel closes it when that
 * process exits in any way, kill -9 included. Linux's PR_SET_PDEATHSIG is
 * not reachable from Node, and a parent's exit handlers do not run on
 * SIGKILL; a pipe's end is what every death has in common.
 */
export function watchParentLifeline(input: Readable, gone: () => void): void {
  let told = false;
  const tell = () => {
    if (told) return;
    told = true;
    gone();
  };
  input.on("end", tell);
  input.on("close", tell);
  input.on("error", tell);
  // Nothing is ever written; reading is what lets the end be seen.
  input.on("data", () => undefined);
  input.resume();
}
