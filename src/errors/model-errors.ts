import { didYouMean } from "./did-you-mean.js";
import { DomainError } from "./domain-error.js";

export class ModelNotFound extends DomainError {
  /** `known`: the catalog's names, for a suggestion when `name` is a typo of one. */
  constructor(name: string, known: Iterable<string> = []) {
    super("model_not_found", `no model named "${name}" in the catalog${didYouMean(name, known)}`, "List the catalog with `llmgw ctl models`.");
  }
}

export class DeclaredInFile extends DomainError {
  constructor(name: string, change: string, configPath: string) {
    super(
      "declared_in_file",
      `model "${name}" is declared in ${configPath}; ${change} would be undone when the server next starts`,
      `Edit the entry for "${name}" in ${configPath} and restart the server (or remove it there and add it with \`llmgw ctl model add\` to manage it at runtime).`,
    );
  }
}
