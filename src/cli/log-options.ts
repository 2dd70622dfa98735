import { Option, type Command } from "commander";
import { logFormats, logLevels, type LogFormat } from "../log-output.js";

export interface LogOptions {
  readonly logLevel: string;
  readonly logFormat: LogFormat;
}

/**
 * --log-level and --log-format, written once for the server, the agent and
 * the gateway, so the three take the same values and refuse a wrong one the
 * same way (naming the option and what it takes). The help shows the
 * choices and the default in force.
 */
export function addLogOptions(command: Command, defaultLevel: (typeof logLevels)[number]): Command {
  return command
    .addOption(new Option("--log-level <level>", "the least severe entries written to stdout").choices(logLevels).default(defaultLevel))
    .addOption(
      new Option("--log-format <format>", "json: one JSON object a line, for a log collector; pretty: one line an entry, TIME LEVEL message key=value, for reading")
        .choices(logFormats)
        .default("json"),
    );
}
