// A one-node ONNX model written as protobuf bytes, for the peer bench (ort-peer.ts): ONNX
// Runtime Web's attention contrib ops need a model, and the bench builds it from the shape
// instead of shipping model files. Only the fields such a model uses are encoded (onnx.proto3:
// ModelProto, GraphProto, NodeProto, AttributeProto, ValueInfoProto, TypeProto.Tensor).

/** TensorProto.DataType values the bench uses. */
export const ONNX_FLOAT = 1;
export const ONNX_INT32 = 6;
export const ONNX_FLOAT16 = 10;

export interface OnnxValue {
  name: string;
  elemType: number;
  /** Dimension sizes; a string names a symbolic dimension. */
  shape: (number | string)[];
}

export interface OnnxNode {
  opType: string;
  domain: string;
  inputs: string[];
  outputs: string[];
  attributes: Record<string, number>;
  /** Attributes that hold floats (the rest of `attributes` are ints). */
  floatAttributes?: string[];
}

class Writer {
  private bytes: number[] = [];

  varint(x: number | bigint): void {
    let v = BigInt.asUintN(64, BigInt(x));
    do {
      let b = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) b |= 0x80;
      this.bytes.push(b);
    } while (v > 0n);
  }

  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  int(field: number, x: number): void {
    this.tag(field, 0);
    this.varint(x);
  }

  float(field: number, x: number): void {
    this.tag(field, 5);
    const b = new Uint8Array(new Float32Array([x]).buffer);
    this.bytes.push(...b);
  }

  bytesField(field: number, b: Uint8Array): void {
    this.tag(field, 2);
    this.varint(b.length);
    for (const x of b) this.bytes.push(x);
  }

  string(field: number, s: string): void {
    this.bytesField(field, new TextEncoder().encode(s));
  }

  message(field: number, build: (w: Writer) => void): void {
    const w = new Writer();
    build(w);
    this.bytesField(field, w.finish());
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

function valueInfo(w: Writer, field: number, v: OnnxValue): void {
  w.message(field, (vi) => {
    vi.string(1, v.name);
    vi.message(2, (type) =>
      type.message(1, (tensor) => {
        tensor.int(1, v.elemType);
        tensor.message(2, (shape) => {
          for (const d of v.shape) shape.message(1, (dim) => (typeof d === 'number' ? dim.int(1, d) : dim.string(2, d)));
        });
      }),
    );
  });
}

/** ModelProto bytes of a graph with one node (IR version 8, opsets ai.onnx 17 and the node's domain 1). */
export function oneNodeModel(node: OnnxNode, inputs: OnnxValue[], outputs: OnnxValue[]): Uint8Array {
  const w = new Writer();
  w.int(1, 8); // ir_version
  w.string(2, 'flashscope-peer-bench'); // producer_name
  w.message(8, (o) => {
    o.string(1, '');
    o.int(2, 17);
  });
  if (node.domain) {
    w.message(8, (o) => {
      o.string(1, node.domain);
      o.int(2, 1);
    });
  }
  w.message(7, (g) => {
    g.message(1, (n) => {
      for (const i of node.inputs) n.string(1, i);
      for (const o of node.outputs) n.string(2, o);
      n.string(3, `${node.opType}_0`);
      n.string(4, node.opType);
      for (const [name, value] of Object.entries(node.attributes)) {
        const isFloat = node.floatAttributes?.includes(name);
        n.message(5, (a) => {
          a.string(1, name);
          if (isFloat) a.float(2, value);
          else a.int(3, value);
          a.int(20, isFloat ? 1 : 2); // AttributeType FLOAT / INT
        });
      }
      if (node.domain) n.string(7, node.domain);
    });
    g.string(2, 'attention');
    for (const v of inputs) valueInfo(g, 11, v);
    for (const v of outputs) valueInfo(g, 12, v);
  });
  return w.finish();
}
