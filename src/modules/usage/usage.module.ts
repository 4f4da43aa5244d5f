import { Module } from '@nestjs/common';
import { AuthModule } from '../identity/auth/auth.module';
import { DatabasesModule } from '../databases/databases.module';
import { TenancyModule } from '../identity/tenancy/tenancy.module';
import { UsageController } from './usage.controller';
import { UsageService } from './usage.service';

/** The usage API (operator routes). */
@Module({
  imports: [AuthModule, TenancyModule, DatabasesModule],
  controllers: [UsageController],
  providers: [UsageService],
  exports: [UsageService],
})
export class UsageModule {}
