#include <pthread.h>
#include <unistd.h>
static void *t(void *a){pause();return a;}
int main(void){pthread_t x;pthread_create(&x,0,t,0);usleep(10000);*(volatile int*)0x10=1;return 0;}