/* SPDX-License-Identifier: MIT */
/*
 * JSON string escaping throughput: ct_json_escape (lib/common/json.c) beside
 * the escaper it replaced (strbuf_add_json_escaped, taken from git history by
 * bench/bench-json.sh into old.inc), on 64 MiB of method names and UTF-8 text
 * with quotes and newlines. Three rounds; prints MiB/s and the ratio.
 */
#include "common/compat.h"
#include <time.h>
#include "common/json.h"
#include "common/strbuf.h"
#include "old.inc"
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(void);
int main(void){
	size_t n = 64u<<20, i; char *s = malloc(n+1); unsigned seed=1;
	const char *names[]={"System.Threading.Monitor::Wait","Clrtap.Fixtures.Blocker::WaitHere","héllo wörld ✓ \"q\" \\ \n"};
	for(i=0;i<n;){const char*w=names[(seed=seed*1103515245+12345)%3];size_t l=strlen(w);if(i+l>n)break;memcpy(s+i,w,l);i+=l;} n=i; s[n]=0;
	for(int r=0;r<3;r++){
	struct strbuf a=STRBUF_INIT,b=STRBUF_INIT; double t0=now(); old_escape(&a,s); double t1=now(); ct_json_escape(&b,s,n); double t2=now();
	printf("input %zu MiB: old per-byte escaper %.3f s (%.0f MiB/s), ct_json_escape %.3f s (%.0f MiB/s), ratio %.1fx\n",n>>20,t1-t0,(n>>20)/(t1-t0),t2-t1,(n>>20)/(t2-t1),(t1-t0)/(t2-t1));
	strbuf_release(&a);strbuf_release(&b);}
}
