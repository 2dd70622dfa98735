import { DomainError } from "./domain-error.js";

export class ModelNotFound extends DomainError {
  constructor(name: string) {
    super("model_not_found", `no model named "${name}" in the catalog`, "List the catalog with `llmgw ctl models`.");
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
