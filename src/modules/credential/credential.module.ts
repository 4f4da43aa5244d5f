import { Module } from '@nestjs/common';
import { AuthModule } from '../identity';
import { ThrottlingModule } from '../throttling';
import { CredentialController } from './credential.controller';

/** GET /v1/credential: what the calling credential may do (the console asks before it offers an action). */
@Module({ imports: [AuthModule, ThrottlingModule], controllers: [CredentialController] })
export class CredentialModule {}
