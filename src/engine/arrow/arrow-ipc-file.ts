import { Schema } from 'apache-arrow';
import { Footer, FileBlock } from 'apache-arrow/ipc/metadata/file';
import { bad, EOS, FILE_MAGIC, FILE_TRAILER_MAGIC, IpcMessage } from './arrow-ipc-message';

/**
 * Lays out an Arrow IPC file message by message (magic, schema, dictionaries and batches, footer), tracking the
 * block offsets the footer lists, so a file can be produced incrementally.
 */
export class IpcFileLayout {
  private offset = 0;
  private readonly dictBlocks: FileBlock[] = [];
  private readonly batchBlocks: FileBlock[] = [];

  constructor(private readonly schema: Schema) {}

  start(schemaMsg: IpcMessage): Buffer[] {
    this.offset = FILE_MAGIC.length + schemaMsg.framedMeta.length + schemaMsg.bodyLength;
    return [FILE_MAGIC, schemaMsg.framedMeta, ...schemaMsg.body];
  }

  add(m: IpcMessage): Buffer[] {
    if (m.kind === 'schema') return [];
    if (this.offset % 8 !== 0) throw bad('message not aligned to 8 bytes');
    (m.kind === 'dictionary' ? this.dictBlocks : this.batchBlocks).push(new FileBlock(m.framedMeta.length, m.bodyLength, this.offset));
    this.offset += m.framedMeta.length + m.bodyLength;
    return [m.framedMeta, ...m.body];
  }

  finish(): Buffer[] {
    const footer = Buffer.from(Footer.encode(new Footer(this.schema, 4 /* MetadataVersion.V5 */, this.batchBlocks, this.dictBlocks)));
    const footerLen = Buffer.alloc(4);
    footerLen.writeInt32LE(footer.length, 0);
    return [EOS, footer, footerLen, FILE_TRAILER_MAGIC];
  }
}

/**
 * Frames a schema, the dictionaries and some record batches as an Arrow IPC file. Bodies are copied once into the
 * result, nothing is decoded. Block offsets stay 8-byte aligned because every message of a valid stream is padded.
 */
export function ipcFile(schema: Schema, schemaMsg: IpcMessage, dictionaries: IpcMessage[], batches: IpcMessage[]): Buffer {
  const layout = new IpcFileLayout(schema);
  const parts = layout.start(schemaMsg);
  for (const m of dictionaries) parts.push(...layout.add(m));
  for (const m of batches) parts.push(...layout.add(m));
  parts.push(...layout.finish());
  const out = Buffer.allocUnsafe(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) off += p.copy(out, off);
  return out;
}
