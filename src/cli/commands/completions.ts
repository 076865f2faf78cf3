/**
 * `stepflow completions bash|zsh|fish`: the shell script that completes `stepflow` on Tab. The
 * script is small and fixed: on every Tab it asks `stepflow __complete WORD…`, which answers from
 * the subcommands' declarations and the user's folder (agents, run ids), so completion follows
 * every new flag, agent and run without regenerating the script.
 *
 * @module
 */
import { UsageError } from "../../errors.ts";
import { closestMatch } from "../../definition/suggest.ts";
import { runAgentSubcommand } from "../agent_context.ts";
import { EXIT_CODES } from "../kit/exit_codes.ts";
import { defineFlags } from "../kit/flags.ts";
import type { CliIo } from "../kit/io.ts";
import { HELP_FLAG } from "../run_agent_flags.ts";
import { defineSubcommand, parseSubcommand, type Subcommand, subcommandHelp } from "./command.ts";

/** The shells `stepflow completions` writes a script for. */
export const SHELLS = ["bash", "zsh", "fish"] as const;

/** The flags of `stepflow completions`. */
export const COMPLETIONS_FLAGS = defineFlags({ ...HELP_FLAG });

/** `stepflow completions`. */
export const command: Subcommand<typeof COMPLETIONS_FLAGS> = defineSubcommand({
  name: "completions",
  usage: ["completions bash|zsh|fish"],
  about: [
    "Prints the completion script of a shell. It completes subcommands, flags and their values,",
    "agent names and run ids (read from this folder on each Tab). Install it once:",
    "  bash: add `source <(stepflow completions bash)` to ~/.bashrc",
    "  zsh:  add `source <(stepflow completions zsh)` to ~/.zshrc, after compinit",
    "  fish: stepflow completions fish > ~/.config/fish/completions/stepflow.fish",
  ].join("\n"),
  operands: [{ name: "SHELL", complete: SHELLS }],
  flags: COMPLETIONS_FLAGS,
  examples: [
    "stepflow completions bash > ~/.local/share/bash-completion/completions/stepflow",
    "stepflow completions fish > ~/.config/fish/completions/stepflow.fish",
  ],
  main,
});

/** Runs `stepflow completions` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand("completions", io, (ctx) => {
    const { flags, operands } = parseSubcommand(command, argv);
    if (flags.help) {
      ctx.io.stdout.write(`${subcommandHelp(command, ctx.userDir)}\n`);
      return Promise.resolve(EXIT_CODES.success);
    }
    ctx.io.stdout.write(completionScript(operands[0]));
    return Promise.resolve(EXIT_CODES.success);
  });
}

/**
 * The completion script of `shell`.
 *
 * @throws {UsageError} for a shell other than bash, zsh and fish
 */
export function completionScript(shell: string): string {
  switch (shell) {
    case "bash":
      return BASH;
    case "zsh":
      return ZSH;
    case "fish":
      return FISH;
  }
  const guess = closestMatch(shell, SHELLS);
  throw new UsageError(
    `No completion for the shell "${shell}"${
      guess ? `; did you mean ${guess}?` : "."
    } stepflow completes in bash, zsh and fish.`,
  );
}

// `stepflow __complete WORD…` prints what to complete: its first line is `words` (the lines after
// it are the candidates), `files` or `dirs` (the shell's own file or folder completion).

const BASH = `# stepflow completion for bash: source <(stepflow completions bash)
_stepflow() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  local IFS=$'\\n'
  local out
  out=($(stepflow __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
  case "\${out[0]}" in
    files) COMPREPLY=($(compgen -f -- "$cur")) ;;
    dirs) COMPREPLY=($(compgen -d -- "$cur")) ;;
    words) COMPREPLY=("\${out[@]:1}") ;;
    *) COMPREPLY=() ;;
  esac
}
complete -o bashdefault -F _stepflow stepflow
`;

const ZSH = `#compdef stepflow
# stepflow completion for zsh: source <(stepflow completions zsh), after compinit
_stepflow() {
  local -a out
  out=("\${(@f)$(stepflow __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  case "\${out[1]}" in
    files) _files ;;
    dirs) _files -/ ;;
    words) (( \${#out} > 1 )) && compadd -- "\${(@)out[2,-1]}" ;;
  esac
}
if (( $+functions[compdef] )); then compdef _stepflow stepflow; fi
`;

const FISH =
  `# stepflow completion for fish: stepflow completions fish > ~/.config/fish/completions/stepflow.fish
function __stepflow_complete
    set -l current (commandline -ct)
    set -l out (stepflow __complete (commandline -opc)[2..-1] "$current" 2>/dev/null)
    switch "$out[1]"
        case files
            __fish_complete_path "$current"
        case dirs
            __fish_complete_directories "$current"
        case words
            printf '%s\\n' $out[2..-1]
    end
end
complete -c stepflow -f -a '(__stepflow_complete)'
`;
