// Seed 002's jaxprs as the notebook prints them (make_jaxpr(grad(sigmoid))(1.0)) and as JAX
// prints make_jaxpr(jit(sigmoid))(1.0) with today's `pjit` name: the expected texts of the
// printer, autodiff and front-end tests. Test-only.
#ifndef XSHARD_FRONTEND_SEED002_JAXPRS_TEST_H_
#define XSHARD_FRONTEND_SEED002_JAXPRS_TEST_H_

namespace xs::fe::testing {

inline constexpr char kGradSigmoidJaxpr[] =
    "{ lambda ; a:f32[]. let\n"
    "    b:f32[] = neg a\n"
    "    c:f32[] = exp b\n"
    "    d:f32[] = add c 1.0\n"
    "    _:f32[] = div 1.0 d\n"
    "    e:f32[] = integer_pow[y=-2] d\n"
    "    f:f32[] = mul 1.0 e\n"
    "    g:f32[] = mul f 1.0\n"
    "    h:f32[] = neg g\n"
    "    i:f32[] = mul h c\n"
    "    j:f32[] = neg i\n"
    "  in (j,) }";

inline constexpr char kJitSigmoidJaxpr[] =
    "{ lambda ; a:f32[]. let\n"
    "    b:f32[] = pjit[\n"
    "      jaxpr={ lambda ; c:f32[]. let\n"
    "          d:f32[] = neg c\n"
    "          e:f32[] = exp d\n"
    "          f:f32[] = add e 1.0\n"
    "          g:f32[] = div 1.0 f\n"
    "        in (g,) }\n"
    "      name=sigmoid\n"
    "    ] a\n"
    "  in (b,) }";

}  // namespace xs::fe::testing

#endif  // XSHARD_FRONTEND_SEED002_JAXPRS_TEST_H_
