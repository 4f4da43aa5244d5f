import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import { Injectable } from '@nestjs/common';

/** This gateway instance, as the owner of the storage work it records (host, process, and a random part). */
@Injectable()
export class ReplicaIdentity {
  readonly id = `${os.hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
}
