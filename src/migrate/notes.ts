/**
 * What a migration found, field by field, and the `MIGRATION.md` report written next to each
 * converted agent.
 *
 * @module
 */

/** How one source field was handled. */
export type NoteKind = "mapped" | "dropped" | "person" | "defect";

/** One line of the migration report. */
export interface MigrationNote {
  /** mapped (has a stepflow equivalent), dropped (no concept), person (needs a decision), defect. */
  kind: NoteKind;
  /** The source field, e.g. `runner.verdict.type` or `steps.consider.transitions.closing`. */
  field: string;
  /** What happened and why. */
  detail: string;
  /** Where in the source: `file:line` relative to the climpt repository (or agent folder). */
  where?: string;
}

/** Collects notes; `where` is filled from the source file and a needle. */
export class NoteSink {
  /** Every note in the order found. */
  readonly notes: MigrationNote[] = [];
  readonly #seen = new Set<string>();

  /** Adds a note. */
  add(kind: NoteKind, field: string, detail: string, where?: string): void {
    const key = `${kind}\0${field}\0${detail}`;
    if (this.#seen.has(key)) return; // two validation steps sharing validators say it once
    this.#seen.add(key);
    const note: MigrationNote = { kind, field, detail };
    if (where) note.where = where;
    this.notes.push(note);
  }

  /** Notes of one kind. */
  of(kind: NoteKind): MigrationNote[] {
    return this.notes.filter((n) => n.kind === kind);
  }
}

const SECTIONS: { kind: NoteKind; title: string; intro: string }[] = [
  {
    kind: "defect",
    title: "Defects in the source",
    intro: "Problems the climpt agent already had; they were carried over, not hidden.",
  },
  {
    kind: "person",
    title: "Needs a person",
    intro:
      "Behaviour stepflow cannot reproduce on its own, or a choice the converter would not guess.",
  },
  {
    kind: "dropped",
    title: "Dropped",
    intro: "Fields with no stepflow concept (or that stepflow computes itself).",
  },
  { kind: "mapped", title: "Mapped", intro: "Fields carried over to the stepflow agent." },
];

/** Renders `MIGRATION.md` for one agent. */
export function renderMigrationReport(input: {
  agent: string;
  source: string;
  notes: readonly MigrationNote[];
  smokeCommand: string;
  smokeNote?: string;
}): string {
  const lines = [
    `# Migration of climpt agent "${input.agent}"`,
    "",
    `Converted from \`${input.source}\` by the climpt migration of stepflow.`,
    "",
    "Check and try it:",
    "",
    "```sh",
    input.smokeCommand,
    "```",
    "",
  ];
  if (input.smokeNote) lines.push(input.smokeNote, "");
  const count = (k: NoteKind) => input.notes.filter((n) => n.kind === k).length;
  lines.push(
    `Summary: ${count("mapped")} mapped, ${count("dropped")} dropped, ${
      count("person")
    } need a person, ${count("defect")} source defect(s).`,
    "",
  );
  for (const section of SECTIONS) {
    const notes = input.notes.filter((n) => n.kind === section.kind);
    if (notes.length === 0) continue;
    lines.push(`## ${section.title}`, "", section.intro, "");
    lines.push("| field | what happened | source |", "| --- | --- | --- |");
    for (const n of notes) {
      lines.push(
        `| \`${cell(n.field)}\` | ${cell(n.detail)} | ${n.where ? `\`${n.where}\`` : ""} |`,
      );
    }
    lines.push("");
  }
  return lines.join("\n");
}

function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}
