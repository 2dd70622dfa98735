import { DomainError } from "./domain-error.js";

/** A profile its engine cannot run as placed (a GPU-only engine with no cards, ComfyUI on two cards). */
export class EngineCannotRun extends DomainError {
  constructor(engine: string, reason: string, hint: string) {
    super("invalid_profile", `${engine} cannot run this replica: ${reason}`, hint);
  }
}

export class AdaptersUnsupported extends DomainError {
  constructor(engine: string, reason: string) {
    super(
      "adapters_unsupported",
      `${engine} cannot serve LoRA adapters here: ${reason}`,
      "Attach the adapters to a profile that runs on vllm, sglang or llamacpp, or remove them from this model.",
    );
  }
}

/** The simulated engine was started with a command line it cannot read. */
export class EngineArgumentsInvalid extends DomainError {
  constructor(engine: string, message: string) {
    super(
      "engine_arguments_invalid",
      `cannot read the ${engine} command line: ${message}`,
      "Start the simulated engine with the argv the driver built (without argv[0]) after `--`: llmgw sim-engine --engine ENGINE -- ARGS...",
    );
  }
}

export class ExternalKeyMissing extends DomainError {
  constructor(modelName: string, variable: string) {
    super(
      "external_key_missing",
      `the API key for external model "${modelName}" is read from ${variable}, which is not set in the server's environment`,
      `Set ${variable} in the environment of the llmgw server process and restart it.`,
    );
  }
}
