// The chain's offer says which kind of program the owner's array takes: a
// tail call needs the callee to be of the caller's program type.
#include <gtest/gtest.h>

#include "collectors/bpf/tail_call_chain.hpp"

using namespace iodiag;

TEST(TailCallChain, TheOfferCarriesItsKindUntilWithdrawn) {
    TailCallChain chain;
    EXPECT_EQ(chain.offered(), ChainKind::None);
    chain.offer(7, ChainKind::PerfTracepoint);
    EXPECT_EQ(chain.offered(), ChainKind::PerfTracepoint);
    chain.offer(7);
    EXPECT_EQ(chain.offered(), ChainKind::TpBtf);
    chain.withdraw();
    EXPECT_EQ(chain.offered(), ChainKind::None);
    chain.offer(-1, ChainKind::PerfTracepoint);   // no array: nothing offered
    EXPECT_EQ(chain.offered(), ChainKind::None);
    EXPECT_FALSE(chain.take(3));
}
