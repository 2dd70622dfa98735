import type { CompletionEntry } from "./completion-spec.js";

export const completionShells = ["bash", "zsh", "fish"] as const;
export type CompletionShell = (typeof completionShells)[number];

/** A shell word in single quotes: command names and flags hold none, but a quote must never end the string early. */
function quoted(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** One `case` over command paths, in POSIX-shell syntax that bash and zsh both read. */
function shCase(name: string, entries: readonly CompletionEntry[], words: (entry: CompletionEntry) => readonly string[]): string {
  const arms = entries.filter((entry) => words(entry).length > 0).map((entry) => `    ${quoted(entry.path)}) echo ${quoted(words(entry).join(" "))} ;;`);
  return [`${name}() {`, '  case "$1" in', ...arms, "  esac", "}"].join("\n");
}

function bash(entries: readonly CompletionEntry[]): string {
  const models = entries.filter((entry) => entry.modelArgument).map((entry) => quoted(entry.path));
  return `# llmgw completion for bash, generated from llmgw's own command tree by \`llmgw completion bash\`.
# Load it with: source <(llmgw completion bash)
${shCase("_llmgw_subcommands", entries, (entry) => entry.subcommands)}
${shCase("_llmgw_options", entries, (entry) => entry.options)}
${shCase("_llmgw_value_options", entries, (entry) => entry.valueOptions)}
${shCase("_llmgw_model_options", entries, (entry) => entry.modelOptions)}
_llmgw_model_argument() {
  case "$1" in
    ${models.length > 0 ? models.join("|") : "''"}) return 0 ;;
  esac
  return 1
}
# Model names from the server ctl would talk to; nothing when it does not answer.
_llmgw_models() {
  "$1" __complete models 2>/dev/null
}
_llmgw() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="" path="" word i positional=0 skip=0
  if [ "$COMP_CWORD" -gt 0 ]; then prev="\${COMP_WORDS[COMP_CWORD-1]}"; fi
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    case "$word" in
      -*) case " $(_llmgw_value_options "$path") " in *" $word "*) skip=1 ;; esac; continue ;;
    esac
    case " $(_llmgw_subcommands "$path") " in
      *" $word "*) path="\${path:+$path }$word" ;;
      *) positional=$((positional + 1)) ;;
    esac
  done
  local candidates=""
  if [ "$skip" = 1 ]; then
    case " $(_llmgw_model_options "$path") " in
      *" $prev "*) candidates="$(_llmgw_models "\${COMP_WORDS[0]}")" ;;
    esac
  elif [ "\${cur#-}" != "$cur" ]; then
    candidates="$(_llmgw_options "$path")"
  elif [ -n "$(_llmgw_subcommands "$path")" ]; then
    candidates="$(_llmgw_subcommands "$path")"
  elif [ "$positional" = 0 ] && _llmgw_model_argument "$path"; then
    candidates="$(_llmgw_models "\${COMP_WORDS[0]}")"
  fi
  COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
}
complete -F _llmgw llmgw
`;
}

/** zsh runs the bash function through its own bash-completion layer, so the two shells complete alike. */
function zsh(entries: readonly CompletionEntry[]): string {
  return `#compdef llmgw
# llmgw completion for zsh, generated from llmgw's own command tree by \`llmgw completion zsh\`.
# Load it with: source <(llmgw completion zsh)   (after compinit)
autoload -U +X bashcompinit && bashcompinit
${bash(entries).split("\n").slice(2).join("\n")}`;
}

function fishSwitch(name: string, entries: readonly CompletionEntry[], words: (entry: CompletionEntry) => readonly string[]): string {
  const arms = entries.filter((entry) => words(entry).length > 0).flatMap((entry) => [`        case ${quoted(entry.path)}`, `            printf '%s\\n' ${words(entry).map(quoted).join(" ")}`]);
  return [`function ${name}`, "    switch $argv[1]", ...arms, "    end", "end"].join("\n");
}

function fish(entries: readonly CompletionEntry[]): string {
  const models = entries.filter((entry) => entry.modelArgument).map((entry) => quoted(entry.path));
  return `# llmgw completion for fish, generated from llmgw's own command tree by \`llmgw completion fish\`.
# Load it with: llmgw completion fish | source
${fishSwitch("__llmgw_subcommands", entries, (entry) => entry.subcommands)}
${fishSwitch("__llmgw_options", entries, (entry) => entry.options)}
${fishSwitch("__llmgw_value_options", entries, (entry) => entry.valueOptions)}
${fishSwitch("__llmgw_model_options", entries, (entry) => entry.modelOptions)}
function __llmgw_candidates
    set -l words (commandline -opc)
    set -l llmgw $words[1]
    set -e words[1]
    set -l cur (commandline -ct)
    set -l path ''
    set -l positional 0
    set -l skip 0
    set -l prev ''
    for word in $words
        set prev $word
        if test $skip = 1
            set skip 0
            continue
        end
        if string match -q -- '-*' $word
            if contains -- $word (__llmgw_value_options $path)
                set skip 1
            end
            continue
        end
        if contains -- $word (__llmgw_subcommands $path)
            set path (string trim -- "$path $word")
        else
            set positional (math $positional + 1)
        end
    end
    if test $skip = 1
        if contains -- $prev (__llmgw_model_options $path)
            $llmgw __complete models 2>/dev/null
        end
    else if string match -q -- '-*' $cur
        __llmgw_options $path
    else if test -n "$(__llmgw_subcommands $path)"
        __llmgw_subcommands $path
    else if test $positional = 0; and contains -- $path ${models.length > 0 ? models.join(" ") : "''"}
        $llmgw __complete models 2>/dev/null
    end
end
complete -c llmgw -f -a '(__llmgw_candidates)'
`;
}

/** The completion script for one shell, from the command tree's completion entries. */
export function completionScript(shell: CompletionShell, entries: readonly CompletionEntry[]): string {
  if (shell === "bash") return bash(entries);
  if (shell === "zsh") return zsh(entries);
  return fish(entries);
}
