/*
 * Preloaded into the lab's charon (LD_PRELOAD): strongSwan's kernel-libipsec
 * makes its TUN device with tun_device_create("ipsec%d") and sets its MTU to
 * 1400, which libstrongswan keeps as the size of every read from the device
 * (strongSwan 5.9.8 src/libcharon/plugins/kernel_libipsec/kernel_libipsec_plugin.c,
 * TUN_DEFAULT_MTU; src/libstrongswan/networking/tun_device.c, set_mtu and
 * read_packet): a packet over 1400 bytes is read cut short and never
 * arrives whole, and a device renamed after it was made keeps its old name
 * in the routes kernel-libipsec installs. This wraps tun_device_create: the
 * device gets the name in VPNLAB_TUN_NAME, and libstrongswan reads up to
 * VPNLAB_TUN_READ bytes; the lab sets the device's MTU itself.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* tun_device_t of strongSwan 5.9.8, src/libstrongswan/networking/tun_device.h:
 * its methods in their order. */
typedef struct tun_device_t tun_device_t;
struct tun_device_t {
	void *read_packet;
	void *write_packet;
	void *set_address;
	void *get_address;
	void *up;
	bool (*set_mtu)(tun_device_t *this, int mtu);
	void *get_mtu;
	void *get_name;
	void *get_fd;
	void *destroy;
};

static bool (*real_set_mtu)(tun_device_t *this, int mtu);

static bool set_mtu(tun_device_t *this, int mtu)
{
	const char *read = getenv("VPNLAB_TUN_READ");

	if (read && atoi(read) > mtu)
	{
		mtu = atoi(read);
	}
	return real_set_mtu(this, mtu);
}

tun_device_t *tun_device_create(const char *name_tmpl)
{
	tun_device_t *(*real)(const char *) = dlsym(RTLD_NEXT, "tun_device_create");
	const char *name = getenv("VPNLAB_TUN_NAME");
	tun_device_t *tun;

	if (!real)
	{
		return NULL;
	}
	tun = real(name && *name ? name : name_tmpl);
	if (tun)
	{
		real_set_mtu = tun->set_mtu;
		tun->set_mtu = set_mtu;
	}
	return tun;
}
