/**
 * An OTLP/HTTP receiver on 127.0.0.1 for the export tests: it takes `POST /v1/traces` and
 * `POST /v1/metrics` as a collector does, in either encoding — protobuf (`application/x-protobuf`,
 * decoded here by the OTLP proto field numbers) or JSON (`application/json`) — and keeps the spans
 * and metrics in one plain shape, with the request headers and resource attributes.
 *
 * @module
 */

/** A span as received. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Absent on a root span. */
  parentSpanId?: string;
  name: string;
  /** OTLP span kind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
  events: string[];
  scope: string;
  resource: Record<string, unknown>;
}

/** One data point of a histogram, as received. */
export interface ReceivedPoint {
  metric: string;
  unit: string;
  attributes: Record<string, unknown>;
  count: number;
  sum?: number;
  bounds: number[];
}

/** One export request, as received. */
export interface ReceivedRequest {
  path: string;
  contentType: string;
  headers: Record<string, string>;
}

/** A running receiver. */
export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>` (the value of `OTEL_EXPORTER_OTLP_ENDPOINT`). */
  url: string;
  spans: ReceivedSpan[];
  points: ReceivedPoint[];
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

/** Starts a receiver on a free loopback port. */
export function startOtlpReceiver(): OtlpReceiver {
  const spans: ReceivedSpan[] = [];
  const points: ReceivedPoint[] = [];
  const requests: ReceivedRequest[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    const contentType = req.headers.get("content-type") ?? "";
    requests.push({ path, contentType, headers: Object.fromEntries(req.headers) });
    const body = new Uint8Array(await req.arrayBuffer());
    const json = contentType.includes("json");
    if (path === "/v1/traces") {
      spans.push(...(json ? jsonSpans(JSON.parse(text(body))) : protoSpans(body)));
    } else if (path === "/v1/metrics") {
      points.push(...(json ? jsonPoints(JSON.parse(text(body))) : protoPoints(body)));
    } else {
      return new Response("not found", { status: 404 });
    }
    // An empty Export…ServiceResponse: all accepted.
    return json
      ? new Response("{}", { headers: { "content-type": "application/json" } })
      : new Response(new Uint8Array(), { headers: { "content-type": "application/x-protobuf" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    spans,
    points,
    requests,
    close: () => server.shutdown(),
  };
}

function text(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

function hex(bytes: Uint8Array): string {
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// -------------------------------------------------------------------------------------------------
// Protobuf: the wire format, read by field number.
// -------------------------------------------------------------------------------------------------

type Field = bigint | Uint8Array;

/** The fields of one message, by number, each with its values in order. */
function fields(buf: Uint8Array): Map<number, Field[]> {
  const out = new Map<number, Field[]>();
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[pos++];
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const wire = key & 7;
    let value: Field;
    if (wire === 0) value = varint();
    else if (wire === 1) value = buf.slice(pos, pos += 8);
    else if (wire === 5) value = buf.slice(pos, pos += 4);
    else if (wire === 2) {
      const length = Number(varint());
      value = buf.subarray(pos, pos += length);
    } else throw new Error(`unexpected wire type ${wire}`);
    const list = out.get(key >>> 3) ?? [];
    list.push(value);
    out.set(key >>> 3, list);
  }
  return out;
}

const bytesOf = (f: Map<number, Field[]>, n: number) => (f.get(n) ?? []) as Uint8Array[];
const first = (f: Map<number, Field[]>, n: number) => f.get(n)?.[0];
const str = (f: Map<number, Field[]>, n: number) => {
  const v = first(f, n);
  return v instanceof Uint8Array ? text(v) : "";
};
const fixed64 = (v: Uint8Array) => new DataView(v.buffer, v.byteOffset, 8).getBigUint64(0, true);
const double = (v: Uint8Array) => new DataView(v.buffer, v.byteOffset, 8).getFloat64(0, true);

function protoValue(buf: Uint8Array): unknown {
  const f = fields(buf);
  if (f.has(1)) return str(f, 1);
  if (f.has(2)) return first(f, 2) === 1n;
  if (f.has(3)) return BigInt.asIntN(64, first(f, 3) as bigint).toString();
  if (f.has(4)) return double(first(f, 4) as Uint8Array);
  if (f.has(5)) return bytesOf(fields(bytesOf(f, 5)[0]), 1).map(protoValue);
  return undefined;
}

function protoAttributes(list: Uint8Array[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list) {
    const f = fields(kv);
    out[str(f, 1)] = protoValue(bytesOf(f, 2)[0] ?? new Uint8Array());
  }
  return out;
}

/** `ExportTraceServiceRequest` → spans. */
function protoSpans(body: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of bytesOf(fields(body), 1)) {
    const r = fields(rs);
    const resource = protoAttributes(bytesOf(fields(bytesOf(r, 1)[0] ?? new Uint8Array()), 1));
    for (const ss of bytesOf(r, 2)) {
      const s = fields(ss);
      const scope = str(fields(bytesOf(s, 1)[0] ?? new Uint8Array()), 1);
      for (const raw of bytesOf(s, 2)) {
        const span = fields(raw);
        const parent = bytesOf(span, 4)[0];
        const status = fields(bytesOf(span, 15)[0] ?? new Uint8Array());
        out.push({
          traceId: hex(bytesOf(span, 1)[0]),
          spanId: hex(bytesOf(span, 2)[0]),
          ...(parent?.length ? { parentSpanId: hex(parent) } : {}),
          name: str(span, 5),
          kind: Number(first(span, 6) ?? 0n),
          attributes: protoAttributes(bytesOf(span, 9)),
          status: {
            code: Number(first(status, 3) ?? 0n),
            ...(status.has(2) ? { message: str(status, 2) } : {}),
          },
          events: bytesOf(span, 11).map((e) => str(fields(e), 2)),
          scope,
          resource,
        });
      }
    }
  }
  return out;
}

/** `ExportMetricsServiceRequest` → histogram data points. */
function protoPoints(body: Uint8Array): ReceivedPoint[] {
  const out: ReceivedPoint[] = [];
  for (const rm of bytesOf(fields(body), 1)) {
    for (const sm of bytesOf(fields(rm), 2)) {
      for (const raw of bytesOf(fields(sm), 2)) {
        const metric = fields(raw);
        const histogram = bytesOf(metric, 9)[0];
        if (!histogram) continue;
        for (const dp of bytesOf(fields(histogram), 1)) {
          const p = fields(dp);
          const bounds = bytesOf(p, 7)[0];
          out.push({
            metric: str(metric, 1),
            unit: str(metric, 3),
            attributes: protoAttributes(bytesOf(p, 9)),
            count: Number(fixed64(bytesOf(p, 4)[0])),
            ...(p.has(5) ? { sum: double(bytesOf(p, 5)[0]) } : {}),
            bounds: bounds
              ? Array.from({ length: bounds.length / 8 }, (_, i) => double(bounds.slice(i * 8)))
              : [],
          });
        }
      }
    }
  }
  return out;
}

// -------------------------------------------------------------------------------------------------
// JSON
// -------------------------------------------------------------------------------------------------

interface JsonValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: JsonValue[] };
}

function jsonValue(v: JsonValue | undefined): unknown {
  if (!v) return undefined;
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return String(v.intValue);
  if ("doubleValue" in v) return v.doubleValue;
  if ("arrayValue" in v) return (v.arrayValue?.values ?? []).map(jsonValue);
  return undefined;
}

function jsonAttributes(list: { key: string; value?: JsonValue }[] = []): Record<string, unknown> {
  return Object.fromEntries(list.map((kv) => [kv.key, jsonValue(kv.value)]));
}

// deno-lint-ignore no-explicit-any
type Json = any;

function jsonSpans(body: Json): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = jsonAttributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        out.push({
          traceId: span.traceId,
          spanId: span.spanId,
          ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
          name: span.name,
          kind: Number(span.kind ?? 0),
          attributes: jsonAttributes(span.attributes),
          status: {
            code: Number(span.status?.code ?? 0),
            ...(span.status?.message ? { message: span.status.message } : {}),
          },
          events: (span.events ?? []).map((e: { name: string }) => e.name),
          scope: ss.scope?.name ?? "",
          resource,
        });
      }
    }
  }
  return out;
}

function jsonPoints(body: Json): ReceivedPoint[] {
  const out: ReceivedPoint[] = [];
  for (const rm of body.resourceMetrics ?? []) {
    for (const sm of rm.scopeMetrics ?? []) {
      for (const metric of sm.metrics ?? []) {
        for (const p of metric.histogram?.dataPoints ?? []) {
          out.push({
            metric: metric.name,
            unit: metric.unit ?? "",
            attributes: jsonAttributes(p.attributes),
            count: Number(p.count),
            ...(p.sum !== undefined ? { sum: Number(p.sum) } : {}),
            bounds: (p.explicitBounds ?? []).map(Number),
          });
        }
      }
    }
  }
  return out;
}
