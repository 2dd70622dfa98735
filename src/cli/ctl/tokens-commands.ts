import { admin } from "../../client/index.js";
import type { Command } from "commander";
import { print, printJson, renderTable } from "../output.js";
import { apiClient, ctlOptions } from "./context.js";

export function registerTokensCommands(ctl: Command): void {
  ctl
    .command("tokens")
    .description("the admin-API tokens: names, roles and when each was made (never the tokens themselves)")
    .option("--json", "print the API's JSON ({tokens: [...]})")
    .action(async (_options, command: Command) => {
      const result = await apiClient(ctlOptions(command)).send(admin.tokens());
      if (ctlOptions(command).json) return printJson(result);
      print(renderTable(["NAME", "ROLE", "CREATED"], result.tokens.map((token) => [token.name, token.role, token.created_at.replace("T", " ").replace(/\.\d+Z$/, "Z")])));
    });

  const token = ctl.command("token").description("create and revoke admin-API tokens");

  token
    .command("create")
    .argument("<name>", "what the token is for, e.g. ci-bot or grafana (the audit names changes by it)")
    .option("--role <role>", "read (may only read; the default) or admin (may change things)", "read")
    .option("--json", "print the API's JSON, token included")
    .description("make a token; it is printed once and only its hash is kept")
    .action(async (name: string, options: { role: string }, command: Command) => {
      const created = await apiClient(ctlOptions(command)).send(admin.createToken({ name, role: options.role }));
      if (ctlOptions(command).json) return printJson(created);
      print(`Created ${created.role} token "${created.name}". It is shown this once; keep it somewhere safe:\n  ${created.token}`);
    });

  token
    .command("revoke")
    .argument("<name>", "the token's name (see `llmgw ctl tokens`)")
    .option("--json", "print the API's answer")
    .description("revoke a token at once (the last admin token cannot be revoked)")
    .action(async (name: string, _options, command: Command) => {
      const result = await apiClient(ctlOptions(command)).send(admin.revokeToken(name));
      if (ctlOptions(command).json) return printJson(result);
      print(`Revoked token "${result.revoked}"; it no longer opens anything.`);
    });
}
