import { masked, redactUrl } from "../catalog/redact.js";

/**
 * Words that make a flag's value a secret. Matched against the flag's
 * dash-separated words, not as substrings: vLLM's --tokenizer and
 * --max-num-batched-tokens are not secrets, and masking them would hide the
 * settings an operator reads the log for.
 */
const secretWords = new Set(["token", "secret", "password", "passwd", "credential", "credentials", "auth", "authorization", "apikey", "key"]);

function isSecretFlag(flag: string): boolean {
  if (!flag.startsWith("-")) return false;
  const words = flag.replace(/^-+/, "").toLowerCase().split(/[-_]/);
  return words.some((word) => secretWords.has(word));
}

/**
 * An engine's command line as it may be written to the replica log, which a
 * read-only token can read (GET /api/v1/replicas/:id/logs): the value of a
 * flag named like a secret (`--api-key sk-…`, `--hf-token=…`) is masked, and
 * so is a URL's password. The engine itself gets the real argv.
 */
export function redactArgv(argv: readonly string[]): string[] {
  const shown: string[] = [];
  let maskNext = false;
  for (const argument of argv) {
    if (maskNext && !argument.startsWith("--")) {
      shown.push(masked);
      maskNext = false;
      continue;
    }
    maskNext = false;
    const equals = argument.indexOf("=");
    if (argument.startsWith("-") && equals > 0) {
      const flag = argument.slice(0, equals);
      shown.push(`${flag}=${isSecretFlag(flag) ? masked : redactUrl(argument.slice(equals + 1))}`);
      continue;
    }
    if (isSecretFlag(argument)) maskNext = true;
    shown.push(redactUrl(argument));
  }
  return shown;
}
