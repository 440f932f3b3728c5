package persistence

import "math/bits"

// messagePartitions is how many hash partitions messages and message_bodies have (migration 0017:
// messages_0 … messages_7, message_bodies_0 … _7, partition k holding remainder k).
const messagePartitions = 8

// messagePartition is the partition of messages and message_bodies that holds the queue's rows: PostgreSQL's
// hash partitioning of one bigint key, computed as PostgreSQL computes it (hashint8extended with the partition
// seed, combined with hash_combine64, modulo the partitions). TestMessagePartitionMatchesPostgres checks it against
// satisfies_hash_partition.
func messagePartition(queueNo int64) int {
	const seed = 0x7A5B22367996DCFD // HASH_PARTITION_SEED, src/include/catalog/partition.h
	// hashint8extended: the low half xor the high half (complemented for a negative value), as an int4.
	lo, hi := uint32(queueNo), uint32(queueNo>>32)
	if queueNo >= 0 {
		lo ^= hi
	} else {
		lo ^= ^hi
	}
	h := hashUint32Extended(lo, seed)
	// hash_combine64(0, h), for the one key column.
	row := h + 0x49a0f4dd15e5a8e3
	return int(row % messagePartitions)
}

// hashUint32Extended is PostgreSQL's hash_uint32_extended (src/common/hashfn.c): Bob Jenkins' lookup3 for one
// 32-bit word with a 64-bit seed.
func hashUint32Extended(k uint32, seed uint64) uint64 {
	a := uint32(0x9e3779b9 + 4 + 3923095)
	b, c := a, a
	if seed != 0 {
		a += uint32(seed >> 32)
		b += uint32(seed)
		a, b, c = lookup3Mix(a, b, c)
	}
	a += k
	a, b, c = lookup3Final(a, b, c)
	return uint64(b)<<32 | uint64(c)
}

func lookup3Mix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= bits.RotateLeft32(c, 4)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 6)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 8)
	b += a
	a -= c
	a ^= bits.RotateLeft32(c, 16)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 19)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 4)
	b += a
	return a, b, c
}

func lookup3Final(a, b, c uint32) (uint32, uint32, uint32) {
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return a, b, c
}
