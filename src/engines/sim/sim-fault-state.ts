import type { ServerResponse } from "node:http";
import { simCrashExitCode, type SimFault } from "./sim-fault.js";

/** The fault a running simulated engine acts out now, and the crash it ends in. */
export class SimFaultState {
  #fault: SimFault = { kind: "none" };
  /** Inference requests left before a crash-after fault ends the engine. */
  #requestsBeforeCrash: number | undefined;
  #exiting = false;

  constructor(
    initial: SimFault,
    readonly log: (line: string) => void,
    readonly exit: (code: number) => void,
  ) {
    this.set(initial);
  }

  get kind(): SimFault["kind"] {
    return this.#fault.kind;
  }

  /** The fault as /sim/status shows it: crash-after with the requests still left. */
  get shown(): string {
    return this.#fault.kind === "crash-after" ? `crash-after:${this.#requestsBeforeCrash ?? 0}` : this.#fault.kind;
  }

  set(fault: SimFault): void {
    this.#fault = fault;
    this.#requestsBeforeCrash = fault.kind === "crash-after" ? fault.requests : undefined;
    if (fault.kind === "crash-after" && fault.requests === 0) this.crash("crash-after:0");
  }

  crash(reason: string): void {
    if (this.#exiting) return;
    this.#exiting = true;
    this.log(`llmgw sim-engine: simulated crash (fault ${reason}), exiting with status ${simCrashExitCode}`);
    this.exit(simCrashExitCode);
  }

  /** Counts a finished inference request toward a crash-after fault, once its response has left. */
  countTowardCrash(response: ServerResponse): void {
    if (this.#requestsBeforeCrash === undefined) return;
    this.#requestsBeforeCrash -= 1;
    if (this.#requestsBeforeCrash > 0) return;
    const crash = () => this.crash(`crash-after:${this.#fault.kind === "crash-after" ? this.#fault.requests : 0}`);
    if (response.writableFinished) crash();
    else response.once("finish", crash);
  }
}
