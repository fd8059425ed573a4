/* sk_hmac: HMAC-SHA256 with a prepared key. See sk_hmac.h.
 *
 * The SHA256_* calls are deprecated in OpenSSL 3 in favour of EVP, which cannot copy a
 * digest state without allocating (3.0); they remain OpenSSL's own SHA-256 (SHA-NI
 * included). inner and outer are the states after (K ^ ipad) and (K ^ opad). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "sk_hmac.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

struct sk_hmac_key {
    SHA256_CTX inner, outer;
};

sk_hmac_key *sk_hmac_key_new(const void *secret, size_t len)
{
    sk_hmac_key *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    unsigned char block[SHA256_CBLOCK] = {0}, pad[SHA256_CBLOCK];
    if (len > SHA256_CBLOCK)
        SHA256(secret, len, block);
    else if (len > 0)
        memcpy(block, secret, len);
    int ok = 1;
    for (size_t i = 0; i < SHA256_CBLOCK; i++)
        pad[i] = block[i] ^ 0x36;
    ok &= SHA256_Init(&k->inner) && SHA256_Update(&k->inner, pad, sizeof(pad));
    for (size_t i = 0; i < SHA256_CBLOCK; i++)
        pad[i] = block[i] ^ 0x5c;
    ok &= SHA256_Init(&k->outer) && SHA256_Update(&k->outer, pad, sizeof(pad));
    OPENSSL_cleanse(block, sizeof(block));
    OPENSSL_cleanse(pad, sizeof(pad));
    if (!ok) {
        sk_hmac_key_free(k);
        return NULL;
    }
    return k;
}

void sk_hmac_key_free(sk_hmac_key *k)
{
    if (!k)
        return;
    OPENSSL_cleanse(k, sizeof(*k)); /* the states stand for the secret */
    free(k);
}

int sk_hmac_sha256(const sk_hmac_key *k, const void *data, size_t len,
                   unsigned char out[SK_HMAC_LEN])
{
    unsigned char ih[SHA256_DIGEST_LENGTH];
    SHA256_CTX c = k->inner;
    int ok = SHA256_Update(&c, data, len) && SHA256_Final(ih, &c);
    c = k->outer;
    ok = ok && SHA256_Update(&c, ih, sizeof(ih)) && SHA256_Final(out, &c);
    return ok ? 0 : -1;
}

int sk_hmac_equal(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}
