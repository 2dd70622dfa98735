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

/** What the scripts know besides the command tree: the shipped presets' names, which need no server. */
export interface CompletionWords {
  readonly presets: readonly string[];
}

/** `case` arms (bash, zsh) or a `contains` list (fish) of the paths whose first argument is a preset; '' matches none. */
function presetPaths(entries: readonly CompletionEntry[], separator: string): string {
  const paths = entries.filter((entry) => entry.presetArgument).map((entry) => quoted(entry.path));
  return paths.length > 0 ? paths.join(separator) : "''";
}

function bash(entries: readonly CompletionEntry[], words: CompletionWords): string {
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
_llmgw_preset_argument() {
  case "$1" in
    ${presetPaths(entries, "|")}) return 0 ;;
  esac
  return 1
}
# The presets shipped with this llmgw: known offline, without asking a server.
_llmgw_presets() {
  echo ${quoted(words.presets.join(" "))}
}
# Model names from the server ctl would talk to; nothing when it does not answer.
# The words that run llmgw come first: llmgw, or npx --no-install llmgw in a clone.
_llmgw_models() {
  "$@" __complete models 2>/dev/null
}
# npx llmgw ...: completed as llmgw, with npx's words taken off; anything else
# after npx is left to npx's own completion, if one was loaded before this script.
_llmgw_npx_before="$(complete -p npx 2>/dev/null | sed -n 's/.*-F \\([^ ]*\\).*/\\1/p')"
_llmgw_npx() {
  if [ "$COMP_CWORD" -ge 2 ] && [ "\${COMP_WORDS[1]}" = llmgw ]; then
    local COMP_WORDS=("\${COMP_WORDS[@]:1}") COMP_CWORD=$((COMP_CWORD - 1))
    _llmgw_runner="npx --no-install llmgw" _llmgw
  elif [ "$COMP_CWORD" = 1 ] && [ -z "$_llmgw_npx_before" ]; then
    COMPREPLY=($(compgen -W llmgw -- "\${COMP_WORDS[1]}"))
  elif [ -n "$_llmgw_npx_before" ]; then
    "$_llmgw_npx_before" "$@"
  fi
}
_llmgw() {
  local runner="\${_llmgw_runner:-\${COMP_WORDS[0]}}"
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
      *" $prev "*) candidates="$(_llmgw_models $runner)" ;;
    esac
  elif [ "\${cur#-}" != "$cur" ]; then
    candidates="$(_llmgw_options "$path")"
  elif [ -n "$(_llmgw_subcommands "$path")" ]; then
    candidates="$(_llmgw_subcommands "$path")"
  elif [ "$positional" = 0 ] && _llmgw_model_argument "$path"; then
    candidates="$(_llmgw_models $runner)"
  elif [ "$positional" = 0 ] && _llmgw_preset_argument "$path"; then
    candidates="$(_llmgw_presets)"
  fi
  COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
}
complete -F _llmgw llmgw
complete -F _llmgw_npx npx
`;
}

/** zsh runs the bash function through its own bash-completion layer, so the two shells complete alike. */
function zsh(entries: readonly CompletionEntry[], words: CompletionWords): string {
  return `#compdef llmgw
# llmgw completion for zsh, generated from llmgw's own command tree by \`llmgw completion zsh\`.
# Load it with: source <(llmgw completion zsh)   (after compinit)
autoload -U +X bashcompinit && bashcompinit
${bash(entries, words).split("\n").slice(2).join("\n")}`;
}

function fishSwitch(name: string, entries: readonly CompletionEntry[], words: (entry: CompletionEntry) => readonly string[]): string {
  const arms = entries.filter((entry) => words(entry).length > 0).flatMap((entry) => [`        case ${quoted(entry.path)}`, `            printf '%s\\n' ${words(entry).map(quoted).join(" ")}`]);
  return [`function ${name}`, "    switch $argv[1]", ...arms, "    end", "end"].join("\n");
}

function fish(entries: readonly CompletionEntry[], words: CompletionWords): string {
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
    # npx llmgw ...: completed as llmgw, run through npx for the server's model names.
    if test "$llmgw" = npx
        set llmgw npx --no-install llmgw
        set -e words[1]
    end
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
    else if test $positional = 0; and contains -- $path ${presetPaths(entries, " ")}
        printf '%s\\n' ${words.presets.map(quoted).join(" ")}
    end
end
complete -c llmgw -f -a '(__llmgw_candidates)'
complete -c npx -f -n 'test (count (commandline -opc)) -ge 2; and test (commandline -opc)[2] = llmgw' -a '(__llmgw_candidates)'
complete -c npx -f -n 'test (count (commandline -opc)) -eq 1' -a llmgw
`;
}

/** The completion script for one shell, from the command tree's completion entries. */
export function completionScript(shell: CompletionShell, entries: readonly CompletionEntry[], words: CompletionWords): string {
  if (shell === "bash") return bash(entries, words);
  if (shell === "zsh") return zsh(entries, words);
  return fish(entries, words);
}
