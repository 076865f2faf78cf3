/**
 * MCP's stdio framing: lines split across chunks, several in one chunk, `\r\n`, multi-byte
 * characters cut between chunks, and the bound on one line (nothing of it kept afterwards).
 */
import assert from "node:assert/strict";
import { LineSplitter, LineTooLongError } from "../../src/mcp/line_splitter.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

Deno.test("LineSplitter: lines across chunks, several per chunk, CRLF, split characters", () => {
  const lines = new LineSplitter(1024);
  assert.deepEqual(lines.push(bytes('{"a":')), []);
  assert.deepEqual(lines.push(bytes('1}\n{"b":2}\r\n{"c"')), ['{"a":1}', '{"b":2}']);
  const snow = bytes('"❄"}\n');
  assert.deepEqual(lines.push(snow.subarray(0, 2)), []); // the character is cut in two
  assert.deepEqual(lines.push(snow.subarray(2)), ['{"c""❄"}']);
  assert.deepEqual(lines.push(bytes("\n")), [""]);
});

Deno.test("LineSplitter: a line past the bound is refused, and the next line reads clean", () => {
  const lines = new LineSplitter(10);
  assert.deepEqual(lines.push(bytes("0123456789\n")), ["0123456789"]); // exactly the bound
  lines.push(bytes("01234"));
  assert.throws(() => lines.push(bytes("567890")), LineTooLongError);
  assert.deepEqual(lines.push(bytes("ok\n")), ["ok"]);
  assert.throws(() => lines.push(bytes("x".repeat(11))), /longer than 10 bytes/);
});

Deno.test("LineSplitter: a line of nearly 10 MiB in 4 KiB chunks comes out whole", () => {
  const lines = new LineSplitter();
  const chunk = new Uint8Array(4096).fill(120);
  let out: string[] = [];
  for (let i = 0; i < 2559; i++) out = lines.push(chunk);
  assert.deepEqual(out, []);
  out = lines.push(bytes("\n"));
  assert.equal(out.length, 1);
  assert.equal(out[0].length, 2559 * 4096);
});
