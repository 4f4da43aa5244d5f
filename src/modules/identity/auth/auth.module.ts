import { Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { CACHE_EXPIRY } from '../../../platform/runtime/young-generation-release';
import { TenancyModule } from '../tenancy/tenancy.module';
import { AdminKeyGuard, DatabaseAdminGuard } from './admin-key.guard';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { BearerStrategy } from './bearer.strategy';
import { CatalogAccessGuard } from './catalog-access.guard';
import { CredentialsService } from './credentials.service';
import { JwtVerifier } from './jwt-verifier.service';
import { NetworkPolicy } from './network-policy';
import { KeyUsage } from './key-usage.service';
import { IdentityCaches } from './identity-caches.service';

/**
 * Credentials: API keys (hashed), OAuth 2.0 bearer tokens (JWT, via passport-http-bearer), and the guards of the
 * REST contract and the operator API.
 */
@Module({
  imports: [TenancyModule, PassportModule],
  providers: [
    ApiKeysRepository,
    ApiKeysService,
    IdentityCaches,
    // The heap release hears of expired entries (src/platform/runtime/young-generation-release.ts).
    { provide: CACHE_EXPIRY, useExisting: IdentityCaches },
    KeyUsage,
    JwtVerifier,
    BearerStrategy,
    CredentialsService,
    NetworkPolicy,
    CatalogAccessGuard,
    AdminKeyGuard,
    DatabaseAdminGuard,
  ],
  exports: [
    ApiKeysService,
    IdentityCaches,
    KeyUsage,
    CredentialsService,
    CatalogAccessGuard,
    AdminKeyGuard,
    DatabaseAdminGuard,
    TenancyModule,
  ],
})
export class AuthModule {}
