import { z } from "zod";

/**
 * The failures the simulated engine can act out, for tests of everything
 * around an engine:
 * - crash-now: the process exits non-zero at once (at start when set in the environment);
 * - crash-after:N: it answers N more inference requests, then exits non-zero;
 * - stall: it accepts inference and health requests and never answers them;
 * - error-500: inference requests get a 500 in OpenAI's error shape;
 * - fail-load: it prints a log line and exits non-zero while "loading" (environment only);
 * - execution-error: (ComfyUI) prompts are accepted, then fail while running, as a
 *   node that raises does: an execution_error on the websocket and in the history;
 * - none: back to normal (admin endpoint).
 */
export type SimFault =
  | { readonly kind: "none" }
  | { readonly kind: "crash-now" }
  | { readonly kind: "crash-after"; readonly requests: number }
  | { readonly kind: "stall" }
  | { readonly kind: "error-500" }
  | { readonly kind: "fail-load" }
  | { readonly kind: "execution-error" };

const faultPattern = /^(none|crash-now|stall|error-500|fail-load|execution-error|crash-after:(\d{1,9}))$/;

export const simFaultSchema = z
  .string()
  .trim()
  .regex(faultPattern, { message: "one of none, crash-now, crash-after:N, stall, error-500, fail-load, execution-error" })
  .transform((text): SimFault => {
    if (text.startsWith("crash-after:")) return { kind: "crash-after", requests: Number(text.slice("crash-after:".length)) };
    return { kind: text as Exclude<SimFault["kind"], "crash-after"> };
  });

/**
 * The exit status of a simulated crash. 134 is what a shell reports for an
 * engine killed by SIGABRT, the usual end of a CUDA or NCCL failure, so the
 * agent's handling is exercised with the status it will see in production.
 */
export const simCrashExitCode = 134;

/** The exit status of a simulated failure during load: a Python engine's uncaught exception exits 1. */
export const simLoadFailureExitCode = 1;
