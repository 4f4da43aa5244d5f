import { Module } from '@nestjs/common';
import { CredentialVendor } from './credential-vendor.service';

/** Credential vending: the storage_options declare/describe/create answers hand to namespace-mode clients. */
@Module({ providers: [CredentialVendor], exports: [CredentialVendor] })
export class VendingModule {}
