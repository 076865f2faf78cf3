/** The bounded conversation history of the chat backends. */
import assert from "node:assert/strict";
import { type ChatTurn, ConversationStore } from "../../src/llm/conversation.ts";

const pair = (n: number): ChatTurn[] => [
  { role: "user", content: `q${n}` },
  { role: "assistant", content: `a${n}` },
];

Deno.test("conversation: keeps the newest turns, always starting with a user turn", () => {
  const store = new ConversationStore({ maxMessages: 5 }); // rounded down to 4
  for (let n = 1; n <= 4; n++) store.append("s", pair(n));
  assert.deepEqual(store.get("s").map((t) => t.content), ["q3", "a3", "q4", "a4"]);
  assert.equal(store.get("s")[0].role, "user");
  assert.deepEqual(store.get("unknown"), []);
  assert.deepEqual(store.get(undefined), []);
});

Deno.test("conversation: drops the least recently used session beyond maxSessions", () => {
  const store = new ConversationStore({ maxSessions: 2 });
  store.append("a", pair(1));
  store.append("b", pair(1));
  store.append("a", pair(2)); // a is now the most recent
  store.append("c", pair(1));
  assert.equal(store.size, 2);
  assert.deepEqual(store.get("b"), []);
  assert.equal(store.get("a").length, 4);
  assert.equal(store.get("c").length, 2);
});

Deno.test("conversation: get returns a copy", () => {
  const store = new ConversationStore();
  store.append("s", pair(1));
  store.get("s").push({ role: "user", content: "injected" });
  assert.equal(store.get("s").length, 2);
});

Deno.test("conversation: maxChars drops the oldest pairs; an oversized pair is not kept", () => {
  const store = new ConversationStore({ maxChars: 10 });
  const sized = (q: string, a: string): ChatTurn[] => [
    { role: "user", content: q },
    { role: "assistant", content: a },
  ];
  store.append("s", sized("q1", "a1"));
  store.append("s", sized("q2", "a2"));
  store.append("s", sized("q3", "a3"));
  assert.deepEqual(store.get("s").map((t) => t.content), ["q2", "a2", "q3", "a3"]);
  assert.equal(store.chars("s"), 8);
  store.append("s", sized("q4", "a".repeat(20)));
  assert.deepEqual(store.get("s"), [], "a pair over the budget alone leaves nothing");
  assert.equal(store.chars("s"), 0);
  store.append("s", sized("q5", "a5"));
  assert.deepEqual(store.get("s").map((t) => t.content), ["q5", "a5"]);
});
