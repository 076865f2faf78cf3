/**
 * ANSI colours of the command lines, off when the stream is not a terminal or `NO_COLOR` is set.
 *
 * @module
 */

/** ANSI colour helpers; identity functions when colour is off. */
export interface Palette {
  /** Dim text. */
  dim(text: string): string;
  /** Bold text. */
  bold(text: string): string;
  /** Red text. */
  red(text: string): string;
  /** Green text. */
  green(text: string): string;
  /** Yellow text. */
  yellow(text: string): string;
  /** Cyan text. */
  cyan(text: string): string;
}

/** A {@linkcode Palette}: ANSI codes when `color` is true, plain text otherwise. */
export function palette(color: boolean): Palette {
  const wrap = (open: number, close: number) => (text: string) =>
    color ? `\x1b[${open}m${text}\x1b[${close}m` : text;
  return {
    dim: wrap(2, 22),
    bold: wrap(1, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
  };
}
