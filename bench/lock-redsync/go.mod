module seckill/bench/lock-redsync

// go 1.19: Debian's golang-go (deploy/local.sh deps) builds it; redsync v4.9.4 is the
// newest release that asks for no later Go.
go 1.19

require (
	github.com/go-redsync/redsync/v4 v4.9.4
	github.com/redis/go-redis/v9 v9.7.0
)

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/hashicorp/errwrap v1.1.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
)
