import { DomainError } from "./domain-error.js";

/**
 * Why a server (llmgw server, an agent's control API) could not listen, for
 * the operator to fix: a taken port, a privileged one, an address this
 * machine does not have. Anything else is returned unchanged.
 */
export function listenFailure(where: string, option: string, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === "EADDRINUSE") {
    return new DomainError("config_invalid", `cannot listen on ${where}: another process already listens there`, `Stop that process, or choose another port with ${option}.`);
  }
  if (code === "EACCES") {
    return new DomainError("config_invalid", `cannot listen on ${where}: not permitted (ports below 1024 need privileges)`, `Choose a port above 1024 with ${option}, or run with the privilege to bind it.`);
  }
  if (code === "EADDRNOTAVAIL") {
    return new DomainError("config_invalid", `cannot listen on ${where}: this machine has no such address`, `Give one of this machine's addresses with ${option} (127.0.0.1 for this machine only, 0.0.0.0 for all).`);
  }
  return error;
}
