import { DomainError } from "./domain-error.js";

/** A profile its engine cannot run as placed (a GPU-only engine with no cards, ComfyUI on two cards). */
export class EngineCannotRun extends DomainError {
  constructor(engine: string, reason: string, hint: string) {
    super("invalid_profile", `${engine} cannot run this replica: ${reason}`, hint);
  }
}

/**
 * Adapters on an engine that cannot take them. Reuses invalid_profile (the
 * profile is one its engine cannot run as written) rather than a code of its
 * own, which would need a status in src/api's table.
 */
export class AdaptersUnsupported extends DomainError {
  constructor(engine: string, reason: string) {
    super(
      "invalid_profile",
      `${engine} cannot serve LoRA adapters here: ${reason}`,
      "Attach the adapters to a profile that runs on vllm, sglang or llamacpp, or remove them from this model.",
    );
  }
}

/** The simulated engine was started with a command line (or LLMGW_SIM_* variable) it cannot read. */
export class EngineArgumentsInvalid extends DomainError {
  constructor(engine: string, message: string) {
    super(
      "config_invalid",
      `cannot read the ${engine} command line: ${message}`,
      "Start the simulated engine with the argv the driver built (without argv[0]) after `--`: llmgw sim-engine --engine ENGINE -- ARGS...",
    );
  }
}

/** The server's environment lacks an external model's key: its configuration is not usable (config_invalid). Names the variable, never a value. */
export class ExternalKeyMissing extends DomainError {
  constructor(modelName: string, variable: string) {
    super(
      "config_invalid",
      `the API key for external model "${modelName}" is read from ${variable}, which is not set in the server's environment`,
      `Set ${variable} in the environment of the llmgw server process and restart it.`,
    );
  }
}
