import { DomainError } from "../errors/light.js";
import type { ModelEntry } from "./schema.js";

/** What a profile needs to find its secrets: the server variables named by its secret_env. */
interface SecretEnvProfile {
  readonly name?: string | undefined;
  readonly engine: string;
  readonly secret_env?: Readonly<Record<string, string>> | undefined;
}

/**
 * The engine variables a profile takes from the server's environment, with
 * their values, for the replica spec sent to the agent. The environment is
 * passed in (the server's process.env) so this stays pure. A variable that is
 * unset or empty is an error naming it, rather than an engine started without
 * its token that fails later with the hub's 401.
 */
export function resolveSecretEnv(
  modelName: string,
  profile: SecretEnvProfile,
  environment: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const resolved: Record<string, string> = {};
  for (const [engineVariable, serverVariable] of Object.entries(profile.secret_env ?? {})) {
    const value = environment[serverVariable];
    if (value === undefined || value === "") throw secretEnvMissing(modelName, profile.name ?? profile.engine, engineVariable, serverVariable);
    resolved[engineVariable] = value;
  }
  return resolved;
}

/** Checks every profile of an entry at add time (or server start), so a missing variable is found before any replica is. */
export function checkSecretEnv(entry: ModelEntry, environment: Readonly<Record<string, string | undefined>>): void {
  for (const profile of entry.profiles ?? []) resolveSecretEnv(entry.name, profile, environment);
}

function secretEnvMissing(modelName: string, profileName: string, engineVariable: string, serverVariable: string): DomainError {
  return new DomainError(
    "config_invalid",
    `model ${modelName} profile ${profileName}: secret_env ${engineVariable} reads $${serverVariable} from the server's environment, and the server has no ${serverVariable} set`,
    `Set ${serverVariable} in the environment of the llmgw server process and restart it, or change secret_env to a variable the server has.`,
  );
}

/** A spec's env as it may be stored or shown: the values that came from secret_env replaced by the server variable's name. */
export function maskSecretEnv(env: Readonly<Record<string, string>>, secretEnv: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([name, value]) => [name, name in secretEnv ? `$${secretEnv[name]}` : value]));
}
