import { admin } from "../../client/index.js";
import type { Command } from "commander";
import type { GatewayKeyView } from "../../protocol/index.js";
import { print, printJson, renderTable } from "../output.js";
import { wholeNumber } from "../parse-option.js";
import { mostRequestsPerKey } from "../../catalog/light.js";
import { apiClient, ctlOptions } from "./context.js";

const shortTime = (iso: string | null) => (iso === null ? "-" : iso.replace("T", " ").replace(/(:\d{2})?\.\d+Z$/, "Z"));
const limit = (value: number | null) => (value === null ? "-" : String(value));
const modelList = (value: string): string[] => value.split(",").map((name) => name.trim()).filter((name) => name.length > 0);

function describeKey(key: GatewayKeyView): string {
  const parts = [
    `models: ${key.models === null ? "any" : key.models.join(", ")}`,
    `rpm: ${key.rpm ?? "no limit"}`,
    `tpm: ${key.tpm ?? "no limit"}`,
    `max in flight: ${key.max_in_flight ?? "the server's limits.requests_per_key"}`,
    `expires: ${key.expires_at === null ? "never" : shortTime(key.expires_at)}`,
  ];
  return parts.join("; ");
}

/** Gateway API keys (for clients of /v1) and their usage. */
export function registerGatewayKeysCommands(ctl: Command): void {
  ctl
    .command("keys")
    .description("the gateway API keys: names, models, limits, expiry and state (never the keys themselves)")
    .option("--json", "print the API's JSON ({keys: [...]})")
    .action(async (_options, command: Command) => {
      const result = await apiClient(ctlOptions(command)).all(admin.keys(), "keys");
      if (ctlOptions(command).json) return printJson(result);
      if (result.keys.length === 0) return print("No gateway keys yet. Make one with `llmgw ctl key create NAME`.");
      print(
        renderTable(
          ["NAME", "STATE", "MODELS", "RPM", "TPM", "MAX IN FLIGHT", "EXPIRES", "CREATED"],
          result.keys.map((key) => [
            key.name,
            key.state,
            key.models === null ? "any" : key.models.join(","),
            limit(key.rpm),
            limit(key.tpm),
            // "-" would read as no cap; a key without its own has the server's.
            key.max_in_flight === null ? "default" : String(key.max_in_flight),
            shortTime(key.expires_at),
            shortTime(key.created_at),
          ]),
        ),
      );
    });

  const key = ctl.command("key").description("create and revoke gateway API keys");

  key
    .command("create")
    .argument("<name>", "who or what the key is for, e.g. data-team or chat-app (usage is counted by it)")
    .option("--models <names>", "model, alias or adapter names the key may use, comma-separated (default: every one)", modelList)
    .option("--rpm <n>", "requests per minute (default: no limit)", wholeNumber(1))
    .option("--tpm <n>", "prompt plus completion tokens per minute (default: no limit)", wholeNumber(1))
    .option("--max-in-flight <n>", `requests the key may have in flight at once, 1 to ${mostRequestsPerKey}, lower or higher than the server's limits.requests_per_key (default: that setting, 256 unless set); set only when the key is made`, wholeNumber(1, mostRequestsPerKey))
    .option("--expires <when>", "a duration from now (30d, 12h) or a date (2027-01-31, UTC) after which the key stops working")
    .option("--json", "print the API's JSON, key included")
    .description("make a gateway key; it is printed once and only its hash is kept")
    .action(async (name: string, options: { models?: string[]; rpm?: number; tpm?: number; maxInFlight?: number; expires?: string }, command: Command) => {
      const created = await apiClient(ctlOptions(command)).send(admin.createKey({
        name,
        ...(options.models !== undefined ? { models: options.models } : {}),
        ...(options.rpm !== undefined ? { rpm: options.rpm } : {}),
        ...(options.tpm !== undefined ? { tpm: options.tpm } : {}),
        ...(options.maxInFlight !== undefined ? { max_in_flight: options.maxInFlight } : {}),
        ...(options.expires !== undefined ? { expires: options.expires } : {}),
      }));
      if (ctlOptions(command).json) return printJson(created);
      print(
        [
          `Created gateway key "${created.name}" (${describeKey(created)}).`,
          "It is shown this once; give it to its user and keep no other copy:",
          `  ${created.key}`,
          "Clients send it as the OpenAI SDK's apiKey (Authorization: Bearer KEY) to this server's /v1.",
          // Last, where the eye ends: a key that nothing checks must not pass for one that limits.
          ...(created.notice ? ["", `Note: ${created.notice}`] : []),
        ].join("\n"),
      );
    });

  key
    .command("revoke")
    .argument("<name>", "the key's name (see `llmgw ctl keys`)")
    .option("--json", "print the API's answer")
    .description("revoke a gateway key; every gateway refuses it within seconds (this server at once)")
    .action(async (name: string, _options, command: Command) => {
      const revoked = await apiClient(ctlOptions(command)).send(admin.revokeKey(name));
      if (ctlOptions(command).json) return printJson(revoked);
      print(`Revoked gateway key "${revoked.name}" at ${shortTime(revoked.revoked_at)}; its usage stays listed under its name.`);
    });

  ctl
    .command("usage")
    .description("gateway usage per key and model: requests, errors, prompt and completion tokens")
    .option("--key <name>", "only this key")
    .option("--model <name>", "only this model (the model that answered)")
    .option("--since <when>", "a duration back from now (1h, 7d) or a date (2026-11-01, UTC); default 24h")
    .option("--json", "print the API's JSON")
    .action(async (options: { key?: string; model?: string; since?: string }, command: Command) => {
      const query = new URLSearchParams();
      if (options.key !== undefined) query.set("key", options.key);
      if (options.model !== undefined) query.set("model", options.model);
      if (options.since !== undefined) query.set("since", options.since);
      const answer = await apiClient(ctlOptions(command)).all(admin.usage(Object.fromEntries(query)), "usage");
      if (ctlOptions(command).json) return printJson(answer);
      const period = `from ${shortTime(answer.since)} to ${shortTime(answer.until)}`;
      if (answer.usage.length === 0) return print(`No gateway usage ${period}${options.key || options.model ? " for that key and model" : ""}.`);
      print(
        [
          `Gateway usage ${period}:`,
          renderTable(
            ["KEY", "MODEL", "REQUESTS", "ERRORS", "PROMPT TOKENS", "COMPLETION TOKENS"],
            answer.usage.map((row) => [row.key, row.model, String(row.requests), String(row.errors), String(row.prompt_tokens), String(row.completion_tokens)]),
          ),
        ].join("\n"),
      );
    });
}
