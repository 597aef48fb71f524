/* The congestion controls' pure integer arithmetic, one file a control
 * under arith/.
 *
 * Included by endpoints.bpf.c (compiled for the kernel) and by host.c
 * (compiled for the host and unit-tested from src/algorithms.rs). Only
 * __u32, __u64 and __s64 are used; the includer provides them. No kernel
 * types, no helpers, no signed division (BPF has none). */
#ifndef EMU_ALGORITHMS_H
#define EMU_ALGORITHMS_H

#ifndef EMU_ALG_INLINE
#define EMU_ALG_INLINE static inline __attribute__((always_inline))
#endif

#include "arith/roots.h"
#include "arith/dctcp.h"
#include "arith/prague.h"
#include "arith/prague_05.h"
#include "arith/sce.h"
#include "arith/reno_sce.h"
#include "arith/cubic.h"
#include "arith/vegas.h"
/* Linux 4.19's congestion controls that kernels lack (cc/linux.h). */
#include "arith/scalable.h"
#include "arith/highspeed.h"
#include "arith/hybla.h"
#include "arith/westwood.h"
#include "arith/veno.h"
#include "arith/bic.h"
#include "arith/htcp.h"
#include "arith/illinois.h"
#include "arith/yeah.h"
#include "arith/nv.h"
#include "arith/relentless.h"

#endif
