import { Module } from '@nestjs/common';
import { TenancyModule } from '../identity';
import { DropPolicy } from './drop-policy.service';

/** The delete profile in force for a database and the protection refusals (the drop paths and the operator API). */
@Module({
  imports: [TenancyModule],
  providers: [DropPolicy],
  exports: [DropPolicy],
})
export class DropPolicyModule {}
