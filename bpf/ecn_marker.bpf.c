// SPDX-License-Identifier: GPL-3.0-or-later
// Copyright (c) 2026, aifabric.lab contributors
//
// The ECN marker of a switch port in the netns lab (docs/congestion.md): a tc classifier (cls_bpf, direct action) at
// the root of the port's htb shaper, ahead of the fair-share filters. It keeps a *virtual* queue: the bytes admitted,
// drained at the port's rate (the htb rate) over the time between packets. A packet that would overflow the buffer
// is dropped (the queue limit is the buffer); one that finds the queue at or above the marking threshold gets CE
// (RED's ramp from min to max, or DCTCP's step at K when min == max); a non-ECT packet that would be marked is
// dropped (RED's behaviour) unless the flags say pass. Everything is counted in the one map entry, which the
// controller reads (plugins/module_utils/_ecn.py decodes it; its VirtualQueue is the same arithmetic in Python).
//
// Built with `make bpf` (clang -target bpf, no libbpf: the helpers are declared here by number, from
// include/uapi/linux/bpf.h's __BPF_FUNC_MAPPER); bpf/embed.py turns the object into plugins/module_utils/
// _ecn_program.py, which the hosts load through the bpf() syscall. Nothing is compiled on a host.

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#define SEC(name) __attribute__((section(name), used))

// struct __sk_buff (include/uapi/linux/bpf.h) up to gso_segs: len @0, protocol @16 (network order), gso_segs @164
// (the wire packets of a GSO packet; 0 or 1 for one packet)
struct __sk_buff {
	u32 len;
	u32 pkt_type;
	u32 mark;
	u32 queue_mapping;
	u32 protocol;
	u32 _unused[36]; // vlan_present .. tstamp, wire_len (@20 .. @163), not read here
	u32 gso_segs;
};

// the map as the loader makes it (BPF_MAP_TYPE_ARRAY, one entry); the section only names it for the relocation
struct map_def {
	u32 type, key_size, value_size, max_entries, map_flags;
};

enum {
	RATE,          // config: the port's drain rate, bytes per second
	LIMIT,         // config: the buffer, bytes
	MIN_TH,        // config: bytes; marking starts above it
	MAX_TH,        // config: bytes; every packet at or above it is marked (min == max: DCTCP's step K)
	MAX_P,         // config: the marking probability at max, scaled to 2^32
	FLAGS,         // config: FLAG_MARK, FLAG_DROP_NOT_ECT
	LAST_NS,       // state: the last arrival (bpf_ktime_get_ns)
	BACKLOG,       // state: the virtual queue after the last arrival, bytes
	PACKETS,       // counters from here on
	BYTES,
	ECT,           // arrived ECT(0) or ECT(1)
	NOT_ECT,       // arrived not-ECT (and anything not IP)
	CE_IN,         // arrived CE already
	MARKED,        // marked CE here
	DROPPED,       // dropped: the buffer was full
	EARLY_DROPPED, // dropped: not-ECT where an ECT packet would have been marked
	DROPPED_BYTES,
	MAX_BACKLOG,
	SEGS,          // wire packets (a GSO packet's segments), as the receivers count them
	ECT_SEGS,
	MARKED_SEGS,
	DROPPED_SEGS,  // both kinds of drop
	HIST_ECT,      // HIST_BUCKETS counters: ECT packets admitted, by the queue they found (bucket = backlog * 16 / buffer)
	HIST_MARKED = HIST_ECT + 16, // and of those, the marked: the marking probability against the queue (BMWG 7.1)
	NFIELDS = HIST_MARKED + 16
};
#define HIST_BUCKETS 16

#define FLAG_MARK 1
#define FLAG_DROP_NOT_ECT 2

struct map_def port SEC("maps") = {2, 4, NFIELDS * 8, 1, 0};

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static u32 (*bpf_get_prandom_u32)(void) = (void *)7;
static long (*bpf_skb_store_bytes)(struct __sk_buff *skb, u32 off, const void *from, u32 len, u64 flags) = (void *)9;
static long (*bpf_l3_csum_replace)(struct __sk_buff *skb, u32 off, u64 from, u64 to, u64 size) = (void *)10;
static long (*bpf_skb_load_bytes)(const struct __sk_buff *skb, u32 off, void *to, u32 len) = (void *)26;

#define TC_ACT_UNSPEC (-1) // not classified here: htb's next filter chooses the class
#define TC_ACT_SHOT 2
#define NS 1000000000ULL
#define ETH_HLEN 14
#define IPV4_BE 0x0008 // htons(ETH_P_IP)
#define IPV6_BE 0xDD86 // htons(ETH_P_IPV6)

#define ADD(field, n) __sync_fetch_and_add(&v[field], (n))

SEC("classifier") int ecn_marker(struct __sk_buff *skb)
{
	u32 key = 0;
	u64 *v = bpf_map_lookup_elem(&port, &key);
	if (!v)
		return TC_ACT_UNSPEC;
	u64 len = skb->len;
	u64 segs = skb->gso_segs;
	if (segs == 0)
		segs = 1;
	u64 now = bpf_ktime_get_ns();
	u64 backlog = v[BACKLOG];
	u64 last = v[LAST_NS];
	if (now > last) {
		u64 elapsed = now - last;
		u64 rate = v[RATE];
		// exact for rates up to 18.4 GB/s (the module refuses more): (elapsed % NS) * rate < 2^64
		u64 drained = (elapsed / NS) * rate + (elapsed % NS) * rate / NS;
		backlog = backlog > drained ? backlog - drained : 0;
		v[LAST_NS] = now;
	}

	u8 hdr[2] = {0, 0};
	u32 ip = 0, ecn = 0;
	if (skb->protocol == IPV4_BE && bpf_skb_load_bytes(skb, ETH_HLEN, hdr, 2) == 0) {
		ip = 4;
		ecn = hdr[1] & 3;
	} else if (skb->protocol == IPV6_BE && bpf_skb_load_bytes(skb, ETH_HLEN, hdr, 2) == 0) {
		ip = 6;
		ecn = (hdr[1] >> 4) & 3;
	}
	ADD(PACKETS, 1);
	ADD(BYTES, len);
	ADD(SEGS, segs);
	if (ecn == 3)
		ADD(CE_IN, 1);
	else if (ecn) {
		ADD(ECT, 1);
		ADD(ECT_SEGS, segs);
	} else
		ADD(NOT_ECT, 1);

	if (backlog + len > v[LIMIT]) {
		v[BACKLOG] = backlog;
		ADD(DROPPED, 1);
		ADD(DROPPED_BYTES, len);
		ADD(DROPPED_SEGS, segs);
		return TC_ACT_SHOT;
	}
	int mark = 0;
	if (v[FLAGS] & FLAG_MARK) {
		u64 lo = v[MIN_TH], hi = v[MAX_TH];
		if (backlog >= hi)
			mark = 1;
		else if (backlog > lo && hi > lo)
			mark = (u64)bpf_get_prandom_u32() < v[MAX_P] * (backlog - lo) / (hi - lo);
	}
	u64 bucket = 0;
	if (ecn == 1 || ecn == 2) {
		bucket = backlog * HIST_BUCKETS / (v[LIMIT] + 1);
		if (bucket > HIST_BUCKETS - 1)
			bucket = HIST_BUCKETS - 1;
		ADD(HIST_ECT + bucket, 1);
	}
	if (mark && (ecn == 1 || ecn == 2)) {
		ADD(HIST_MARKED + bucket, 1);
		if (ip == 4) {
			u16 old = *(u16 *)hdr;
			hdr[1] |= 3;
			u16 new = *(u16 *)hdr;
			bpf_skb_store_bytes(skb, ETH_HLEN, hdr, 2, 0);
			bpf_l3_csum_replace(skb, ETH_HLEN + 10, old, new, 2);
		} else {
			hdr[1] |= 0x30;
			bpf_skb_store_bytes(skb, ETH_HLEN, hdr, 2, 0);
		}
		ADD(MARKED, 1);
		ADD(MARKED_SEGS, segs);
	} else if (mark && ecn == 0 && (v[FLAGS] & FLAG_DROP_NOT_ECT)) {
		v[BACKLOG] = backlog;
		ADD(EARLY_DROPPED, 1);
		ADD(DROPPED_BYTES, len);
		ADD(DROPPED_SEGS, segs);
		return TC_ACT_SHOT;
	}
	backlog += len;
	v[BACKLOG] = backlog;
	if (backlog > v[MAX_BACKLOG])
		v[MAX_BACKLOG] = backlog;
	return TC_ACT_UNSPEC;
}

char _license[] SEC("license") = "GPL";
